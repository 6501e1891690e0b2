#!/usr/bin/env python3
"""Validate h2ledger output against docs/schema/ with Python's jsonschema (pip install jsonschema).

usage: h2ledger replay F -T json | scripts/check-schema.py report
       h2ledger calls F -T jsonl | scripts/check-schema.py record --lines
       h2ledger frames F -T json | scripts/check-schema.py listing
"""
import json
import pathlib
import sys

import jsonschema

name = sys.argv[1]
lines = "--lines" in sys.argv
schema = json.loads((pathlib.Path(__file__).parent.parent / "docs/schema" / f"{name}.schema.json").read_text())
validator = jsonschema.Draft202012Validator(schema)
text = sys.stdin.read()
docs = [json.loads(l) for l in text.splitlines()] if lines else [json.loads(text)]
errors = 0
for d in docs:
    for e in validator.iter_errors(d):
        errors += 1
        print(f"{'/'.join(map(str, e.path))}: {e.message}", file=sys.stderr)
print(f"{len(docs)} documents, {errors} errors")
sys.exit(1 if errors else 0)
