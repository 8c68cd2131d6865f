"""`ckpt scan` measured against picklescan on a generated corpus (scan_corpus.py): every
malicious file is flagged dangerous with its payload named, no file picklescan flags passes,
and no benign control written by real torch is flagged."""
import json

import pytest
from picklescan.scanner import scan_file_path

import scan_corpus
from _util import run_ckpt

# One worker runs the whole module, so its module-scoped fixture is built once.
pytestmark = pytest.mark.xdist_group(__name__)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("scan_corpus")
    return out, scan_corpus.malicious(out), scan_corpus.benign(out)


def ckpt_scan(path):
    proc = run_ckpt("scan", "--json", path)
    return proc.returncode, json.loads(proc.stdout)["files"][0]


def dangerous(file):
    return {g["path"] for p in file["pickles"] for g in p["globals"] if g["class"] == "dangerous"}


def picklescan_flags(path):
    result = scan_file_path(str(path))
    return result.issues_count > 0 or result.infected_files > 0


def test_every_malicious_file_is_dangerous_with_its_payload_named(corpus):
    out, malicious, _ = corpus
    missed = []
    for name, payload in sorted(malicious.items()):
        code, file = ckpt_scan(out / name)
        if code != 1 or payload not in dangerous(file):
            missed.append(f"{name}: exit {code}, dangerous {sorted(dangerous(file))}")
    assert not missed, f"{len(missed)} of {len(malicious)} missed:\n" + "\n".join(missed)


def test_no_file_picklescan_flags_passes_ckpt(corpus):
    out, malicious, benign = corpus
    passed = []
    flagged_by_them = 0
    for name in sorted(malicious) + sorted(benign):
        if picklescan_flags(out / name):
            flagged_by_them += 1
            code, _ = ckpt_scan(out / name)
            if code == 0:
                passed.append(name)
    assert not passed, "picklescan flags these, ckpt scan passes them: " + ", ".join(passed)
    print(f"picklescan flagged {flagged_by_them} of {len(malicious)} malicious "
          f"+ {len(benign)} benign files; ckpt flagged every one of those")


def test_benign_controls_written_by_torch_scan_clean(corpus):
    out, _, benign = corpus
    flagged = []
    for name in benign:
        code, file = ckpt_scan(out / name)
        if code != 0:
            globals_ = sorted({(g["path"], g["class"]) for p in file["pickles"]
                               for g in p["globals"] if g["class"] != "safe"})
            flagged.append(f"{name}: exit {code}, {globals_}, issues {file['issues']}")
    assert not flagged, "\n".join(flagged)
