"""Get the public evaluation data sets the quality scripts read, and check every file.

    python benchmarks/data.py fetch                  # download into data/eval/ (the default)
    python benchmarks/data.py fetch --to DIR         # somewhere else
    python benchmarks/data.py fetch --from MIRROR    # copy from a local mirror of the same layout
    python benchmarks/data.py verify [--to DIR]      # check what is there

Each file comes from its original repository at a pinned commit and must match the sha256
below; the command exits 0 only when every file checks. The sets are third-party (licences in
each folder's LICENSE): LoCoMo and SciFact are for non-commercial research use. The data is
read in place by the quality scripts and never committed (``data/eval/`` is git-ignored).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT / "data" / "eval"
RAW = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"

# set -> [(local path, repository, commit, path in the repository, bytes, sha256)]
LOCOMO = ("snap-research/LoCoMo", "3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376")
ANSERINI = ("castorini/anserini-tools", "5b819c1a45c8a0a3ec9426f476694f44a29dfaf3")
SCIFACT_ZIP = ("sumithra-p-v/claimverifier", "b42f1c3444b28884ddcfadffafbfe223646c6c37")
METATOOL = ("HowieHwong/MetaTool", "35e81bb7576826e980c80fed8f8c0a2b4a1e6fbb")
SEAL = ("fairyshine/Seal-Tools", "ce753ecd60ed08dd376984035de531ab8421f1c6")
HAMMER = ("MadeAgents/HammerBench", "52c69f6a213893da9c85d0dec66ccf254a310e55")
HAMMER_IS = ("MadeAgents/HammerBench", "fe65a4b2f5665e046e23dc1baab0ae4fd0978d46")
HAMMER_HEAD = ("MadeAgents/HammerBench", "52c0c79f600608751fb3f1ce6fecfa1c97edfe51")

FILES: dict[str, list[tuple]] = {
    "locomo": [
        ("LICENSE.txt", *LOCOMO, "LICENSE.txt", 19347,
         "41003d4a74749c0220e33dd415042164b5a1093ed401f36277234f772d22d3d0"),
        ("locomo10.json", *LOCOMO, "data/locomo10.json", 2805274,
         "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"),
    ],
    "beir-scifact": [
        ("qrels.beir-v1.0.0-scifact.test.txt", *ANSERINI,
         "qrels/qrels.beir-v1.0.0-scifact.test.txt", 5702,
         "8b7315286f8dc823956025a1fc9c9ff0bfe142d7b409458ccd758cfa0713ccba"),
        ("scifact.zip", *SCIFACT_ZIP, "data/scifact.zip", 2872024,
         "a798a7046af0f6fa04476448459ce7cafeea5bd90d4d99c53a0e27dc5e1a4673"),
        ("topics.beir-v1.0.0-scifact.test.tsv.gz", *ANSERINI,
         "topics/topics.beir-v1.0.0-scifact.test.tsv.gz", 11998,
         "a624d39fa2a41da44b0148ac2b1c2cb9856ece2c4afbb6ac9360e8e524d66b4f"),
    ],
    "metatool": [
        ("LICENSE", *METATOOL, "LICENSE", 1066,
         "7d3e10ed82f071f6f96ff6bf660826472ca1045d546cdd2ccb3ffda2103588f7"),
        ("all_clean_data.csv", *METATOOL, "dataset/data/all_clean_data.csv", 2770203,
         "cf2eb0474396677530931def51012da4e88f9f34f655332f04177b2054101baf"),
        ("big_tool_des.json", *METATOOL, "dataset/big_tool_des.json", 6799,
         "dcb6b4d2586acaa697d40ac710ceed2c201487b0eb2ea2651f56025bfabc7f5a"),
        ("multi_tool_query_golden.json", *METATOOL, "dataset/data/multi_tool_query_golden.json",
         112358, "ef37d10a8cb5b41435d6ea3ae29819afdb8d6db0852268830e5ee77259507f51"),
        ("plugin_des.json", *METATOOL, "dataset/plugin_des.json", 22484,
         "c446ade5acfb8e16c477124250665021e63b11bf6cb232db04fc9ba6bed0389a"),
        ("plugin_info.json", *METATOOL, "dataset/plugin_info.json", 326361,
         "864bf25bd5494feca861acb98f69d260f212d9c098a2dc68b4b2ee357d6fb2f5"),
    ],
    "seal-tools": [
        ("LICENSE", *SEAL, "LICENSE", 11357,
         "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"),
        ("dev.jsonl", *SEAL, "Seal-Tools_Dataset/dev.jsonl", 513391,
         "53da12c9fab27e47eba4767ae3625b53bb6474215c38e5033b1fe11e84efacf6"),
        ("field.jsonl", *SEAL, "Seal-Tools_Dataset/field.jsonl", 142395,
         "ce6edd5e728a7dddfce8071f694837c48ac6ef4929ff983d87b7d0ead8f4fc02"),
        ("test_in_domain.jsonl", *SEAL, "Seal-Tools_Dataset/test_in_domain.jsonl", 511226,
         "330020288948e711846417c2fca9a5980ef0f1adc01ad74dc38cc9ff7142811f"),
        ("test_out_domain.jsonl", *SEAL, "Seal-Tools_Dataset/test_out_domain.jsonl", 542260,
         "c2a86a3d3a5270f578e07f39a0973310cbcaec3b8d72166d7be38d21c9720be6"),
        ("tool.jsonl", *SEAL, "Seal-Tools_Dataset/tool.jsonl", 2574022,
         "35e34aaec1f0793c2b5a5dff734cb925837988f59ed0fe4f410d67f3d8375f5c"),
    ],
    "hammerbench-zh": [
        ("LICENSE", *HAMMER_HEAD, "LICENSE", 11357,
         "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"),
        ("zh/multi-turn/HammerBench_External.json", *HAMMER,
         "data/zh/multi-turn/HammerBench_External.json", 2658612,
         "ebc2256ef47d05031d419cd5b759a9de1b385b1f27ab1a3855ea2153fbef70ff"),
        ("zh/multi-turn/HammerBench_IS.json", *HAMMER_IS, "data/zh/multi-turn/HammerBench_IS.json",
         1706385, "2bc651d1291fb837805ac594806bc7a1155efba0b6ec23ec22369e9c70fecec9"),
        ("zh/multi-turn/HammerBench_mQsA.json", *HAMMER,
         "data/zh/multi-turn/HammerBench_mQsA.json", 2315168,
         "13ab41f51f62856ed4625557832d418fcae1a2f70946c3884aae384e5767b9e6"),
        ("zh/single-turn/ir_ST_External.json", *HAMMER,
         "data/zh/single-turn/ir_ST_External.json", 3731354,
         "e5c52ba1faaa948e2088b3555fc287b0bc2d2e02c20e6be0657007d53a782a75"),
    ],
}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check(path: Path, size: int, sha: str) -> str | None:
    """None when ``path`` is the expected file, else why not."""
    if not path.is_file():
        return "missing"
    if path.stat().st_size != size:
        return f"{path.stat().st_size} bytes, expected {size}"
    got = sha256_of(path)
    return None if got == sha else f"sha256 {got[:12]}…, expected {sha[:12]}…"


def _get(url: str, dest: Path, timeout: float) -> None:
    with urllib.request.urlopen(url, timeout=timeout) as resp, open(dest, "wb") as out:
        shutil.copyfileobj(resp, out)


def fetch(to: Path, mirror: Path | None, timeout: float = 60.0, out=sys.stdout) -> int:
    """Bring every file into ``to`` (from ``mirror`` when given, else its source); returns the
    number of files that do not check."""
    bad = 0
    for name, files in FILES.items():
        for rel, repo, commit, src, size, sha in files:
            dest = to / name / rel
            if check(dest, size, sha) is None:
                print(f"ok      {name}/{rel}", file=out)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=dest.parent, delete=False) as tmp:
                tmp_path = Path(tmp.name)
            try:
                if mirror is not None:
                    shutil.copyfile(mirror / name / rel, tmp_path)
                else:
                    _get(RAW.format(repo=repo, commit=commit, path=src), tmp_path, timeout)
                why = check(tmp_path, size, sha)
                if why is None:
                    tmp_path.replace(dest)
            except OSError as exc:  # network or mirror: reported, the others still run
                why = f"could not get it: {exc}"
            finally:
                tmp_path.unlink(missing_ok=True)
            if why is None:
                print(f"fetched {name}/{rel}", file=out)
            else:
                bad += 1
                print(f"FAILED  {name}/{rel}: {why}", file=out)
    return bad


def verify(to: Path, out=sys.stdout) -> int:
    bad = 0
    for name, files in FILES.items():
        for rel, *_rest, size, sha in files:
            why = check(to / name / rel, size, sha)
            print(f"{'ok' if why is None else 'FAILED'}  {name}/{rel}"
                  + ("" if why is None else f": {why}"), file=out)
            bad += why is not None
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for cmd in ("fetch", "verify"):
        p = sub.add_parser(cmd)
        p.add_argument("--to", type=Path, default=DEFAULT_DIR, help=f"default {DEFAULT_DIR}")
        if cmd == "fetch":
            p.add_argument("--from", dest="mirror", type=Path, default=None,
                           help="copy from this local mirror (same layout) instead of the web")
    args = ap.parse_args(argv)
    if args.command == "fetch":
        bad = fetch(args.to, args.mirror)
    else:
        bad = verify(args.to)
    total = sum(len(f) for f in FILES.values())
    print(f"{total - bad} of {total} files check" + ("" if not bad else f"; {bad} do not"))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
