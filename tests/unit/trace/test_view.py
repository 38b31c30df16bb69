"""``inference-operator trace view`` without a browser (inference_operator/trace/view.py).

Covers: a missing file, a directory, a file that is not JSON lines, JSON without a header, another
format, another version each end with one ``error:`` line naming the file and the problem and exit
code 2, no traceback; the page is one self-contained file: the stylesheet and script inline, no
``http(s)://`` in any ``src``/``href``/``url()``, a Content-Security-Policy that forbids fetching
(and allows the inline style and the five scripts by their sha256, in order, no 'unsafe-inline'),
the records embedded as JSON that parses back to exactly the trace; a record holding
``</script>``, ``<!--``, ``&`` and U+2028 cannot end the data element early; a ring (``FILE``,
``FILE.1``) is read whole, oldest first; the default output is ``FILE.html``; the template files
are package data (pyproject.toml), so an installed wheel has them.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from inference_operator.cli import main
from inference_operator.trace.sink import FileSink, RingSink
from inference_operator.trace.view import csp_hash, embed_json, load_records, render_page

ROOT = Path(__file__).resolve().parents[3]
HEADER = {
    "seq": 1,
    "t": 0.0,
    "type": "header",
    "format": "inference-operator-trace",
    "version": 1,
    "backend": "simulator",
    "started": "2026-01-01T00:00:00Z",
    "clock": "fake",
    "operatorVersion": "0.1.0",
    "phases": ["observe", "diff", "act", "status"],
}


def write_trace(path: Path, records: list[dict[str, object]]) -> Path:
    sink = FileSink(path)
    for record in records:
        sink.write(record)
    sink.close()
    return path


def embedded(html: str) -> object:
    opening = '<script id="trace-data" type="application/json">'
    start = html.index(opening) + len(opening)
    return json.loads(html[start : html.index("</script>", start)])


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "no such file"),
        ("not json\n", "not a trace (not JSON lines"),
        ('{"seq":1,"type":"note","text":"x"}\n', "does not start with a header record"),
        (json.dumps({**HEADER, "format": "other"}) + "\n", "format is 'other'"),
        (json.dumps({**HEADER, "version": 3}) + "\n", "trace format version 3; this reader knows 1, 2"),
        ("[1, 2]\n", "a line is not a JSON object"),
    ],
)
def test_bad_input_is_one_error_line_naming_the_file_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, problem: str
) -> None:
    trace = tmp_path / "t.jsonl"
    if content is not None:
        trace.write_text(content)
    assert main(["trace", "view", str(trace)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and str(trace) in err and problem in err, err
    assert "Traceback" not in err and not (tmp_path / "t.jsonl.html").exists()


def test_a_directory_is_refused_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "view", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_the_page_is_self_contained_and_carries_the_trace(tmp_path: Path) -> None:
    records = [HEADER, {"seq": 2, "t": 0.0, "type": "note", "text": "scenario create"}]
    trace = write_trace(tmp_path / "t.jsonl", records)
    assert main(["trace", "view", str(trace)]) == 0
    html = (tmp_path / "t.jsonl.html").read_text()
    assert embedded(html) == records
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I), "an external resource"
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", html, re.I), "an external url() in the CSS"
    assert "<link" not in html and "@import" not in html and "fetch(" not in html
    assert "default-src 'none'" in html, "the page may fetch nothing (Content-Security-Policy)"
    assert html.count("<script") == 6 and html.count("<style>") == 1
    assert "/*VIEWER_JS*/" not in html and "/*TRACE_DATA*/" not in html and "TRACE_TITLE" not in html


def test_the_csp_allows_exactly_the_inline_blocks_by_hash_and_nothing_inline_else(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.jsonl", [HEADER])
    assert main(["trace", "view", str(trace)]) == 0
    html = (tmp_path / "t.jsonl.html").read_text()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert policy is not None and "unsafe-inline" not in policy.group(1) and "unsafe-eval" not in policy.group(1)
    directives = dict(d.strip().split(" ", 1) for d in policy.group(1).split(";"))
    styles = re.findall(r"<style>(.*?)</style>", html, re.S)
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)  # the JSON data block is not executed
    assert len(styles) == 1 and len(scripts) == 5
    assert directives["style-src"] == csp_hash(styles[0])
    assert directives["script-src"].split() == [csp_hash(s) for s in scripts]
    assert not re.search(r"\son[a-z]+\s*=", html.split("<style>")[0]), "no inline event handler in the markup"


def test_embedding_cannot_end_the_script_element_early() -> None:
    hostile = {"seq": 2, "t": 0.0, "type": "note", "text": "</script><script>alert(1)</script> <!-- & \u2028"}
    data = embed_json([HEADER, hostile])
    assert "<" not in data and ">" not in data and "&" not in data and "\u2028" not in data
    assert json.loads(data)[1] == hostile
    html = render_page([HEADER, hostile], title="</title><b>x")
    assert embedded(html) == [HEADER, hostile]
    assert html.count("</script>") == 6 and "</title><b>x" not in html


def test_a_ring_is_read_whole_oldest_first(tmp_path: Path) -> None:
    ring = RingSink(tmp_path / "r.jsonl", max_bytes=1024, files=3)
    ring.write(HEADER)
    for seq in range(2, 40):
        ring.write({"seq": seq, "t": 0.0, "type": "note", "text": "x" * 40})
    ring.close()
    assert (tmp_path / "r.jsonl.1").exists()
    records = load_records(tmp_path / "r.jsonl")
    assert records[0]["type"] == "header" and [r["type"] for r in records[1:]] == ["note"] * (len(records) - 1)
    seqs = [r["seq"] for r in records[1:]]
    assert seqs == sorted(seqs) and seqs[-1] == 39


def test_the_template_is_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = config["tool"]["setuptools"]["package-data"]["inference_operator.trace"]
    for name in ("index.html", "viewer.css", "capacity.js", "model.js", "capview.js", "diagram.js", "viewer.js"):
        assert f"viewer/{name}" in listed and (ROOT / "inference_operator" / "trace" / "viewer" / name).is_file()
