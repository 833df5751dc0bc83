"""Reports jobs to a nixl-telemetry service through TAO's unmodified client.

Reads a JSON list of jobs (the keyword arguments of
`nvidia_tao_core.telemetry.telemetry.send_telemetry_data`) from standard input,
reports each with that function (TAO_TELEMETRY_SERVER names the service), and
prints a JSON list of what went over the wire: for every `requests.post` the
client made, its URL, body, user name, timeout, headers it set and the status it
got. The posts are observed, not replaced: `requests.post` is wrapped, and the
real function sends every request.
"""

import json
import sys

import requests

real_post = requests.post
posted = []


def observed_post(url, data=None, **kwargs):
    response = real_post(url, data=data, **kwargs)
    auth = kwargs.get("auth")
    posted.append({
        "url": url,
        "body": data,
        "user": auth[0] if auth else None,
        "timeout": kwargs.get("timeout"),
        "headers": kwargs.get("headers"),
        "content_type": response.request.headers.get("Content-Type"),
        "status": response.status_code,
    })
    return response


requests.post = observed_post

from nvidia_tao_core.telemetry.telemetry import send_telemetry_data  # noqa: E402

for job in json.load(sys.stdin):
    send_telemetry_data(**job)
print(json.dumps(posted))
