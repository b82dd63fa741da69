"""A minimal Alertmanager webhook receiver for the compose stack: prints each notification.

Alertmanager POSTs a JSON document per notification group; this prints one line per alert
(status, name, service, tool, kind, summary) so `docker compose logs alert-webhook` reads like a
pager. It uses only the standard library so the stock python image runs it unchanged.
"""

from __future__ import annotations

import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class AlertPrinter(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            notification = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self.send_response(400)
            self.end_headers()
            return
        for alert in notification.get("alerts", []):
            labels = alert.get("labels", {})
            summary = alert.get("annotations", {}).get("summary", "")
            print(
                f"[{alert.get('status', '?')}] {labels.get('alertname')} service={labels.get('service_name')}"
                f" tool={labels.get('tool')} kind={labels.get('kind')}: {summary}",
                flush=True,
            )
        self.send_response(200)
        self.end_headers()

    def do_GET(self) -> None:  # health check
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, format: str, *args: object) -> None:  # keep the log to alerts only
        return


if __name__ == "__main__":
    port = int(os.environ.get("PORT", "8080"))
    ThreadingHTTPServer(("0.0.0.0", port), AlertPrinter).serve_forever()
