"""pySBD's 48 English "golden rules" against `split_sentences`.

The rules ship inside the `pysbd` package (dev dependency) as `benchmarks/english_golden_rules.py`
in site-packages. They are loaded by path, not imported: `import benchmarks` would find this
repository's own `benchmarks/` folder. Nothing of them is copied here.

They are compared the way pySBD's own benchmark compares them: the list of expected sentences
against ours, each with its whitespace collapsed. Where a golden rule and one of the project's own
examples (tests/test_sentences.py) disagree, the project's example wins. When this test was
written there was no such conflict and all 48 passed (pySBD 0.3.4 itself passes 47: not #18).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from locallens.sentences import split_sentences

MIN_PASSING = 46


def _load_golden_rules() -> list[tuple[str, list[str]]]:
    pysbd = pytest.importorskip("pysbd")
    path = Path(pysbd.__file__).resolve().parent.parent / "benchmarks" / "english_golden_rules.py"
    if not path.is_file():
        pytest.skip(f"pysbd {getattr(pysbd, '__version__', '?')} ships no {path.name}")
    spec = importlib.util.spec_from_file_location("_pysbd_english_golden_rules", path)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.GOLDEN_EN_RULES)


def _normalised(sentences: list[str]) -> list[str]:
    return [" ".join(sentence.split()) for sentence in sentences]


def test_english_golden_rules() -> None:
    rules = _load_golden_rules()
    assert len(rules) == 48
    failing = []
    for number, (text, expected) in enumerate(rules, start=1):
        got = split_sentences(text)
        if _normalised(got) != _normalised(expected):
            failing.append(f"#{number}: {text!r}\n    expected {expected!r}\n    got      {got!r}")
    passed = len(rules) - len(failing)
    assert passed >= MIN_PASSING, (
        f"{passed}/{len(rules)} golden rules pass (want >= {MIN_PASSING}); failing:\n" + "\n".join(failing)
    )
