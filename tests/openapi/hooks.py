"""Schemathesis hooks of the conformance run (tests/tests/openapi.rs).

`POST /api/brain/import` takes `application/x-ndjson`: JSON lines. The document gives
its body as an array of export records, one per line; Schemathesis has no serializer
for the media type, so this one writes each item of the array as a line of JSON (and
anything else the negative phase generates as a single line).
"""

import json

import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    if isinstance(value, list):
        lines = [json.dumps(item, ensure_ascii=False) for item in value]
        text = "".join(line + "\n" for line in lines)
    else:
        text = json.dumps(value, ensure_ascii=False) + "\n"
    return {"data": text.encode("utf-8")}
