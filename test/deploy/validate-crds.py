"""Validates the custom resources in rendered manifests against test/deploy/crd-schemas.json, strictly.

usage: python3 validate-crds.py manifests.yaml   → one line per resource; exit 1 on any error or unknown CRD kind
(built-in kinds are left to kubernetes-validate --strict)."""
import json
import os
import sys

import jsonschema
import yaml

BUILTIN_GROUPS = ("v1", "apps/v1", "batch/v1", "policy/v1", "networking.k8s.io/v1", "autoscaling/v2", "rbac.authorization.k8s.io/v1")

schemas = json.load(open(os.path.join(os.path.dirname(__file__), "crd-schemas.json")))
failed = False
with open(sys.argv[1]) as f:
    for doc in yaml.safe_load_all(f):
        if not doc:
            continue
        key = f"{doc.get('apiVersion')}/{doc.get('kind')}"
        if doc.get("apiVersion") in BUILTIN_GROUPS:
            continue
        name = doc.get("metadata", {}).get("name")
        schema = schemas.get(key)
        if schema is None:
            print(f"ERROR {key} {name}: no schema for this custom resource")
            failed = True
            continue
        errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
        for e in errors:
            print(f"ERROR {key} {name}: {'.'.join(str(p) for p in e.path) or '(root)'}: {e.message}")
        failed = failed or bool(errors)
        if not errors:
            print(f"OK {key} {name}")
sys.exit(1 if failed else 0)
