"""A CycloneDX 1.5 SBOM of one mcpx-edge binary, on stdout (edge/release.sh).

stdin: `cargo tree --prefix none --format "{p}|{l}"` of the binary's normal
dependencies for its target ("name vX.Y.Z[ (path)]|license" per line, with
" (*)" on repeats). Each crate from crates.io gets its purl and the SHA-256
that Cargo.lock records for its download; the workspace's own crates and the
Rust standard library and musl (both linked in statically) are listed too.

usage: python3 edge/sbom.py NAME VERSION TARGET RUSTC_VERSION MUSL_VERSION FEATURES
"""
import json
import sys
import tomllib
import uuid
from datetime import datetime, timezone
import os

name, version, target, rustc, musl, features = sys.argv[1:7]
with open("Cargo.lock", "rb") as f:
    lock = {(p["name"], p["version"]): p for p in tomllib.load(f)["package"]}

components = {}
for line in sys.stdin:
    line = line.rstrip("\n")
    if not line.strip():
        continue
    crate, _, license_ = line.partition("|")
    license_ = license_.replace(" (*)", "").strip()
    crate = crate.replace(" (*)", "")
    parts = crate.split()
    cname, cver = parts[0], parts[1].lstrip("v")
    if (cname, cver) in components or cname == "mcpx-edge":
        continue
    entry = lock.get((cname, cver))
    if entry is None:
        sys.exit(f"sbom: {cname} {cver} is not in Cargo.lock")
    c = {"type": "library", "bom-ref": f"{cname}@{cver}", "name": cname, "version": cver}
    if license_:
        c["licenses"] = [{"expression": license_.replace("/", " OR ")}]
    source = entry.get("source", "")
    if source.startswith("registry+"):
        c["purl"] = f"pkg:cargo/{cname}@{cver}"
        if "checksum" in entry:
            c["hashes"] = [{"alg": "SHA-256", "content": entry["checksum"]}]
    elif not source:
        c["description"] = "part of mcpx (this repository)"
    else:
        c["externalReferences"] = [{"type": "vcs", "url": source}]
    components[(cname, cver)] = c

components[("std", rustc)] = {
    "type": "library", "bom-ref": f"rust-std@{rustc}", "name": "rust-std", "version": rustc,
    "description": f"the Rust standard library, rebuilt from the toolchain's source for {target}",
    "licenses": [{"expression": "MIT OR Apache-2.0"}],
}
components[("musl", musl)] = {
    "type": "library", "bom-ref": f"musl@{musl}", "name": "musl", "version": musl,
    "description": f"the C library, linked in statically for {target}",
    "licenses": [{"expression": "MIT"}],
}
epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
bom = {
    "bomFormat": "CycloneDX",
    "specVersion": "1.5",
    # The same for the same inputs: derived from them, not random.
    "serialNumber": "urn:uuid:" + str(uuid.uuid5(uuid.NAMESPACE_URL, f"mcpx-edge/{name}/{features}/{epoch}")),
    "version": 1,
    "metadata": {
        "timestamp": datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "component": {
            "type": "application", "bom-ref": name, "name": "mcpx-edge", "version": version,
            "description": f"static build for {target}, features: {features}",
            "licenses": [{"expression": "MIT OR Apache-2.0"}],
        },
    },
    "components": sorted(components.values(), key=lambda c: (c["name"], c["version"])),
}
json.dump(bom, sys.stdout, indent=1)
sys.stdout.write("\n")
