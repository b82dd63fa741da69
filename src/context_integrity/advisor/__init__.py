"""``suggest``: evidence over recorded runs -> the cheapest declarations, with their evidence.

- :mod:`.proposals`: a merged run profile -> what to declare per tool, or why not;
- :mod:`.render`: proposals as a contracts file, as Python, as a readable report.

Declared, never inferred: nothing here arms a check. Never imports the OpenTelemetry SDK.
"""
