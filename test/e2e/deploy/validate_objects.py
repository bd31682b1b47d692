"""Validates Kubernetes objects (for test/e2e/deploy/*.test.ts, issue #34).

usage: validate_objects.py [--crd CRD.yaml]... OBJECTS.yaml...

Each document of OBJECTS is checked against the openAPIV3Schema of the given CRD that
defines its group, version and kind, made strict as the API server's strict field
validation is (a field the schema does not declare is an error, except under
x-kubernetes-preserve-unknown-fields); any other object against the Kubernetes API schema
of kubernetes-validate (strict). Prints one JSON line per object:
{"file", "kind", "name", "schema", "errors"}. Exits 0.
"""
import json
import sys

import jsonschema
import kubernetes_validate
import yaml

KUBERNETES = "1.37.0"


def strict(schema):
    """The schema with additionalProperties false wherever properties are declared and nothing else is allowed."""
    if isinstance(schema, dict):
        schema = {k: strict(v) for k, v in schema.items()}
        if (
            "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    return schema


def crd_schemas(paths):
    schemas = {}
    for path in paths:
        with open(path) as f:
            for crd in yaml.safe_load_all(f):
                if not crd or crd.get("kind") != "CustomResourceDefinition":
                    continue
                spec = crd["spec"]
                for version in spec["versions"]:
                    key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
                    schemas[key] = (path, strict(version["schema"]["openAPIV3Schema"]))
    return schemas


def main(argv):
    crds, files = [], []
    args = iter(argv)
    for a in args:
        if a == "--crd":
            crds.append(next(args))
        else:
            files.append(a)
    schemas = crd_schemas(crds)
    for path in files:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        for doc in docs:
            key = (doc.get("apiVersion"), doc.get("kind"))
            out = {"file": path, "kind": doc.get("kind"), "name": (doc.get("metadata") or {}).get("name")}
            if key in schemas:
                crd, schema = schemas[key]
                validator = jsonschema.Draft7Validator(schema)
                errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
                out["schema"] = crd
                out["errors"] = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]
            else:
                out["schema"] = f"kubernetes {KUBERNETES}"
                try:
                    kubernetes_validate.validate(doc, KUBERNETES, strict=True)
                    out["errors"] = []
                except kubernetes_validate.ValidationError as e:
                    out["errors"] = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"]
                except kubernetes_validate.SchemaNotFoundError as e:
                    out["errors"] = [e.message]
            print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
