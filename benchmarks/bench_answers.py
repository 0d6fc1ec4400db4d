"""Answers a person can trust: is the expected fact stated, are unanswerable questions refused.

Question sets (each a corpus and JSONL files; `"answerable": false` marks a question whose answer
is in no document, the right answer being the refusal):
- sample: tests/data/questions.jsonl (20) + benchmarks/data/sample_unanswerable.jsonl (12), over
  sample_docs/;
- broad: benchmarks/data/sample_broad.jsonl (24 + 3) over sample_docs/: "what is the leave
  policy?", "summarize the on-call rotation": answered when the answer is drawn from the
  expected file (every printed unit cites it);
- es: benchmarks/data/sample_es_over_en.jsonl (20 + 4), Spanish questions over sample_docs'
  English notes; es-given: its 20 answerable questions with the expected note's two best chunks
  put first (the retrieved excerpts of other files after them), so that the answer stage and its
  refusal are measured on a Spanish question whose English note is among the excerpts, apart
  from retrieval;
- pydoc-es: benchmarks/data/pydoc_es_over_en.jsonl (18 + 4), Spanish questions over the English
  language-reference topics below: held out, nothing is tuned on it;
- pydoc: benchmarks/data/pydoc_questions.jsonl (40 + 12) over the language reference topics that
  ship with CPython (`pydoc_data`, written out by benchmarks/corpora.py);
- stdlib: benchmarks/data/stdlib_questions.jsonl (56) over the standard library's manual pages;
- borg: benchmarks/data/borg_questions.jsonl (40 + 5) over the BorgBackup manual (Debian
  `borgbackup-doc`, benchmarks/corpora.py): the corpus nobody tuned on, measured only;
- varnish, varnish-es: benchmarks/data/varnish_questions.jsonl (40 + 8) and
  varnish_es_over_en.jsonl (8 + 2, Spanish) over the Varnish Cache documentation (Debian
  `varnish-doc`, `corpora.py --varnish`): written before anything was measured on them and held
  out for three rounds; a development set since (its misses are studied), out of the default
  `--sets`.
- postfix, postfix-es: benchmarks/data/postfix_questions.jsonl (40 + 8, 6 of the 40 broad) and
  postfix_es_over_en.jsonl (8 + 2, Spanish) over the Postfix README documents (Debian
  `postfix-doc`, `corpora.py --postfix`): written before anything was measured on them, for
  fitting and judging leave-one-corpus-out; outside the default `--sets`.
- apache, apache-es: benchmarks/data/apache_questions.jsonl (40 + 8) and apache_es_over_en.jsonl
  (8 + 2, Spanish) over the English Apache HTTP Server 2.4 manual (Debian `apache2-doc`,
  `corpora.py --apache`): written before anything was measured on them, a corpus for fitting and
  judging leave-one-corpus-out; out of the default `--sets`.
- sqlite, sqlite-es: benchmarks/data/sqlite_questions.jsonl (40 + 8, 6 of the 40 broad) and
  sqlite_es_over_en.jsonl (8 + 2, Spanish) over the SQLite documentation (Debian `sqlite3-doc`,
  `corpora.py --sqlite`): written before anything was measured on them, a held-out corpus
  (in no fit: not in `FIT_SETS`, `TRANSFER_SETS` or `REFUSAL_SETS`); out of the
  default `--sets`.
- rsyslog, rsyslog-es: benchmarks/data/rsyslog_questions.jsonl (40 + 8, 6 of the 40 broad) and
  rsyslog_es_over_en.jsonl (8 + 2, Spanish) over the rsyslog documentation (Debian `rsyslog-doc`,
  `corpora.py --rsyslog`): written before anything was measured on them, a held-out corpus
  like sqlite (in no fit); out of the default `--sets`.
- zsh, zsh-es: benchmarks/data/zsh_questions.jsonl (40 + 8, 5 of the 40 broad) and
  zsh_es_over_en.jsonl (8 + 2, Spanish) over the Z shell manual and FAQ (Debian `zsh-doc`,
  `corpora.py --zsh`): long reference pages (a chapter each, most of them definition lists of
  options, parameters, builtins and their flags), written before anything was measured on them;
  a development corpus, out of the default `--sets`. zsh-es2: zsh_es2_over_en.jsonl (20 + 2),
  Spanish questions in a Spanish speaker's words (carpeta, fichero, historial, comodín, orden,
  tecla, atajo) over the same corpus, written with their English (zsh_es2_gold_en.jsonl) before
  anything was run on them: Spanish on a corpus its handling was not fitted to.
- borg-es: borg_es_over_en.jsonl (40 + 5), every question of the borg set as a Spanish speaker
  asks it (copia, podar, carpeta, fichero, clave, frase de contraseña), written with the pairing
  borg_es_gold_en.jsonl before anything was run on them (the twenty-fourth round).
- stdlib-es: stdlib_es_over_en.jsonl (20), the first 20 stdlib questions in a Spanish speaker's
  words (carpeta, fichero, hoja de cálculo, línea de órdenes), written with the pairing
  stdlib_es_gold_en.jsonl before anything was run on them (the twenty-fourth round).
- borg-html, varnish-html, varnish-html-es, apache-html, apache-html-es, sqlite-html,
  sqlite-html-es, rsyslog-html, rsyslog-html-es, zsh-html, zsh-html-es, zsh-html-es2: the same
  questions over the same pages as the package ships them (HTML, navigation and all), read by
  locallens's own HTML reader as a person indexing the package's folder has them; corpora.py's
  converter is not involved. sqlite-html and rsyslog-html are held out like sqlite and rsyslog.
- adoc, adoc-es: benchmarks/data/adoc_questions.jsonl (40 + 8, 5 of the 40 broad) and
  adoc_es_over_en.jsonl (8 + 2, Spanish) over AsciiDoc documentation as it ships (PyPI sdists of
  qutebrowser and asciidoc, `corpora.py --adoc`): the files kept as they are, HTML rendered by
  asciidoc (`settings.html`, `commands.html`, ...) beside AsciiDoc sources (`.asciidoc`, `.txt`
  manual pages with `*--option*::` definition lists), so the package's own readers are measured;
  written before anything was measured on them; a development corpus, out of the default `--sets`.
- filter-repo: benchmarks/data/filter_repo_questions.jsonl (35 + 6) over git-filter-repo 2.47.0's
  documentation as its sdist ships it (`corpora.py --filter-repo`): a manual page in AsciiDoc
  written as Git's own are, beside Markdown guides; written before anything was run on it and
  never tuned on.
- tig: benchmarks/data/tig_questions.jsonl (40 + 6, 2 of the 40 broad) over tig's manual and
  manual pages as Debian's tig package ships them (`corpora.py --tig`: HTML written by AsciiDoc
  from sources in Git's style), written and committed before anything was run on them.
- manpages: benchmarks/data/manpage_questions.jsonl (24 + 4) over nine manual pages of eight
  Debian packages as `man` prints them, saved to text (`corpora.py --manpages`: tar, tmux, less,
  grep, sed, find, ssh, ssh_config, curl); written and committed before anything was run on them.
- filter-repo-options, adoc-options: benchmarks/data/filter_repo_options.jsonl (10) and
  adoc_options.jsonl (6), questions naming an option and asking what it does, over the same two
  corpora; written before anything was run on them.
- bash-html, bash-pdf, bash-mixed: benchmarks/data/bash_questions.jsonl (35 + 6) over the Bash
  manual page and reference manual as Debian's `bash-doc` ships them (`corpora.py --bash KIND`):
  as HTML, as PDF, and the package's folder as shipped (both manuals in both formats beside the
  examples); a question's files are the manuals in the corpus's formats. Written in a user's words
  before anything was measured on them; the same questions over each format measure what reading
  a PDF loses against its HTML, and what copies of one manual cost the answer.
- bash-symbols, zsh-symbols (and zsh-html-symbols), pydoc-symbols: bash_symbols.jsonl (10, over
  bash-html), zsh_symbols.jsonl (4) and pydoc_symbols.jsonl (5): questions naming a symbol (`$?`,
  `<<<`, `${#var}`, `(N)`, `!!`, `@`, `//`, `->`), which the keyword index and the answer units'
  key terms drop; written before anything was run on them, the baseline for handling symbols.
  bash-symbols2, pydoc-symbols2: bash_symbols2.jsonl (16, over bash-html) and pydoc_symbols2.jsonl
  (10): a second such set (`${var%pattern}`, `2>&1`, `<(list)`, `~`, `<<`, `**` in a dict display),
  written before anything was run on it to judge what was built on the first; nothing is tuned on it.
- zsh-pdf, zsh-pdf-es, zsh-pdf-es2: the zsh sets' questions over the Z shell manual as zsh-doc
  ships it typeset (`corpora.py --zsh-pdf`: `zsh.pdf` alone, without the FAQ), against zsh-html:
  what reading a PDF of ~250 pages loses against its HTML pages.
- broad-<corpus>, faq-<corpus>: benchmarks/data/broad_questions.jsonl (20 broad questions over seven
  manuals, judged by the file the summary cites; its lines are read by hand) and faq_questions.jsonl
  (14 questions a manual's FAQ answers, in a user's words); written before anything was run on
  them, as are the compare-, example- and list- sets. broad2-<corpus>: broad_questions_fresh.jsonl
  (20 more over six manuals, written after the twenty-first round's change to broad questions and
  before any run of them).

Every question goes through `locallens.answer.ask` exactly as the CLI calls it, with the models
kept warm (`WarmModels`). Modes: `extractive` (`ask --extractive`) and `default` (SmolLM2, the
answer check, its extractive fallback, as `ask` runs it), and the default mode's prompt holding
`whole` excerpts, their selected `passages`, or the whole excerpts `trimmed` (`MODES`). Generations are cached in `--workdir` by their prompt, so
the same prompt is generated once across runs and trees: run this script with PYTHONPATH at an
older checkout to measure "before" on the very same generations.

Figures per set and mode: expected answer stated (answerable questions whose printed answer
holds an expected answer, `contains_answer`; for broad questions: answered from the expected
file), false refusals, unanswerable refused, citation coverage, median answer words, and the
median time of the answer stage. `--dump FILE` writes every printed unit (for labelling by
hand). `--timing N` times N questions per mode cold (a new `locallens ask` process) and warm.

`--fit` fits the unit scorer's weights (locallens/unit_scores.py) on the sample, pydoc and
stdlib sets' answerable questions and prints each signal's effect (the share of questions whose
best unit states the answer, with every signal, and with each one left out), then the refusal
(`refusal_fit`; `--fit --refusal-only` for the refusal alone): over the sets of `REFUSAL_SETS`
among `--sets`, each corpus left out in turn (`refusal_loco`: weights and threshold fitted on the
other corpora, judged on it, and judged again with its cosines moved by `SHIFT`), for every
variant of the evidence (`refusal_variants`), pooled and for the Spanish sets apart; then the
shipped evidence (`extractive.EVIDENCE_WEIGHTS`' signals) per set left out, fitted on every
corpus with its trade-off per threshold, and the weights to ship (`SHIPPABLE`). `--dump` writes
each question's route and evidence.
`--fit` and `--transfer` (the scorer part alone) judge the unit scorer by leave-one-corpus-out:
per corpus of `TRANSFER_SETS`, the best unit states the answer with weights fitted on every
corpus and fitted without that one (`scorer_transfer`).

`--diagnose` tells, for every answerable question whose `--extractive` passage neither states the
expected answer nor refuses, where the answer was: in no excerpt, in no unit, or in a unit with
its rank, excerpt, kind, the passage rule that left it out (`why_not_printed`) and the signals it
lost by; tallied per set (`--save F`: one row per question). `--cache F.pkl` also keeps every
question's scored units and feature rows; `--replay F.pkl` rebuilds the passages offline from
them with the current code (`replay`; a refusal or a summary keeps its live outcome), and
`--replay F.pkl --weight-grid NAME=W1,W2,...` chooses one signal's weight with each corpus left
out (`weight_grid`). A replay takes seconds, so passage rules and weights can be compared before
a full run. `--replay F.pkl --rank-study` studies the units' ranking as learning to rank
(`rank_study.py`: recall@1/2/3 of the shipped score and of listwise and pairwise fits on more
signals, each corpus left out) and the passage's rules chosen with each corpus left out;
`--replay F.pkl --token-study` signals read from MiniLM's token states (late interaction, the
question as a statement: `token_study.py`), each added to the shipped score, each corpus left out.

`--topic-study` measures the refusal's missing-topic gate (`extractive.missing_topic`): for every
question answered by the evidence, each of its words that no excerpt and no chunk of the brain
holds, how far leaving it out moves the question and whether the question is then closer to the
excerpts' best unit; then how many near misses and answerable questions each rule would refuse.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import _common as c
from corpora import (
    BASH_KINDS,
    BASH_MANUALS,
    write_adoc_corpus,
    write_apache_corpus,
    write_bash_corpus,
    write_borg_corpus,
    write_filter_repo_corpus,
    write_manpages_corpus,
    write_postfix_corpus,
    write_pydoc_corpus,
    write_rsyslog_corpus,
    write_sqlite_corpus,
    write_stdlib_corpus,
    write_tig_corpus,
    write_varnish_corpus,
    write_zsh_corpus,
    write_zsh_pdf_corpus,
)

ROOT = c.ROOT
DATA = Path(__file__).resolve().parent / "data"
SETS: dict[str, tuple[str, list[Path]]] = {
    "sample": ("sample", [ROOT / "tests/data/questions.jsonl", DATA / "sample_unanswerable.jsonl"]),
    "broad": ("sample", [DATA / "sample_broad.jsonl"]),
    "es": ("sample", [DATA / "sample_es_over_en.jsonl"]),
    "pydoc-es": ("pydoc", [DATA / "pydoc_es_over_en.jsonl"]),
    # The same Spanish questions, their expected English note's two best chunks first (then the
    # retrieved excerpts of other files): the answer stage measured apart from retrieval.
    "es-given": ("sample", [DATA / "sample_es_over_en.jsonl"]),
    "pydoc": ("pydoc", [DATA / "pydoc_questions.jsonl"]),
    "stdlib": ("stdlib", [DATA / "stdlib_questions.jsonl"]),
    "stdlib-es": ("stdlib", [DATA / "stdlib_es_over_en.jsonl"]),
    "borg": ("borg", [DATA / "borg_questions.jsonl"]),
    "borg-es": ("borg", [DATA / "borg_es_over_en.jsonl"]),
    "varnish": ("varnish", [DATA / "varnish_questions.jsonl"]),
    "varnish-es": ("varnish", [DATA / "varnish_es_over_en.jsonl"]),
    "postfix": ("postfix", [DATA / "postfix_questions.jsonl"]),
    "postfix-es": ("postfix", [DATA / "postfix_es_over_en.jsonl"]),
    "apache": ("apache", [DATA / "apache_questions.jsonl"]),
    "apache-es": ("apache", [DATA / "apache_es_over_en.jsonl"]),
    "sqlite": ("sqlite", [DATA / "sqlite_questions.jsonl"]),
    "sqlite-es": ("sqlite", [DATA / "sqlite_es_over_en.jsonl"]),
    "rsyslog": ("rsyslog", [DATA / "rsyslog_questions.jsonl"]),
    "rsyslog-es": ("rsyslog", [DATA / "rsyslog_es_over_en.jsonl"]),
    "zsh": ("zsh", [DATA / "zsh_questions.jsonl"]),
    "zsh-es": ("zsh", [DATA / "zsh_es_over_en.jsonl"]),
    "zsh-es2": ("zsh", [DATA / "zsh_es2_over_en.jsonl"]),
    "adoc": ("adoc", [DATA / "adoc_questions.jsonl"]),
    "adoc-es": ("adoc", [DATA / "adoc_es_over_en.jsonl"]),
    # git-filter-repo's manual page (AsciiDoc, written as Git's are) and Markdown guides: a corpus
    # in the held-out manual's style, its questions written before anything was run on them.
    "filter-repo": ("filter-repo", [DATA / "filter_repo_questions.jsonl"]),
    # Questions naming an option and asking what it does (`What does --no-ff do?`), over the two
    # corpora of AsciiDoc manual pages: written before anything was run on them.
    "filter-repo-options": ("filter-repo", [DATA / "filter_repo_options.jsonl"]),
    "adoc-options": ("adoc", [DATA / "adoc_options.jsonl"]),
    # tig's manual and manual pages as Debian ships them (HTML written by AsciiDoc from sources in
    # Git's style): questions written and committed before anything was run on them.
    "tig": ("tig", [DATA / "tig_questions.jsonl"]),
    # Nine manual pages of eight Debian packages as `man` prints them, saved to text (tar, tmux,
    # less, grep, sed, find, ssh, ssh_config, curl; `corpora.py --manpages`): 24 questions and 4
    # without an answer, written and committed before anything was run on them.
    "manpages": ("manpages", [DATA / "manpage_questions.jsonl"]),
    # Questions naming a symbol (`$?`, `<<<`, `//`, `(N)`), which the keyword index and the answer
    # units' key terms drop: written before anything was run on them, the baseline of that lead.
    "pydoc-symbols": ("pydoc", [DATA / "pydoc_symbols.jsonl"]),
    "zsh-symbols": ("zsh", [DATA / "zsh_symbols.jsonl"]),
    # A second set, written before anything was run on it, to judge what was built on the first.
    "pydoc-symbols2": ("pydoc", [DATA / "pydoc_symbols2.jsonl"]),
}
# The same questions over the same pages as the package ships them, read by locallens's own HTML
# reader rather than by corpora.py's converter (`<corpus>-html`: "varnish-html", "varnish-html-es";
# a question's files are the pages' `.html` names): what a person indexing the package's folder has.
HTML_CORPORA = ("borg", "varnish", "apache", "sqlite", "rsyslog", "zsh")
# Questions comparing two things, one set per corpus (`compare_questions.jsonl`'s `corpus`): the
# answer states what the manual says of each (`answers_all`).
COMPARE_CORPORA = ("pydoc", "stdlib", "bash-html", "borg", "varnish", "zsh", "apache", "postfix", "filter-repo", "adoc")
SETS.update({f"compare-{corpus}": (corpus, [DATA / "compare_questions.jsonl"]) for corpus in COMPARE_CORPORA})
# Questions asking for an example ("Show me an example of ...", "What does ... look like?"), one set
# per corpus (`example_questions.jsonl`'s `corpus`): the answer prints the manual's example
# (`answers_all`: lines of it).
EXAMPLE_CORPORA = ("pydoc", "stdlib", "bash-html", "borg", "varnish", "zsh", "apache", "postfix", "filter-repo", "adoc")
SETS.update({f"example-{corpus}": (corpus, [DATA / "example_questions.jsonl"]) for corpus in EXAMPLE_CORPORA})
# ... and over the two corpora never tuned on (read by their totals only).
SETS.update(
    {f"example-{corpus}": (corpus, [DATA / "example_questions_untuned.jsonl"]) for corpus in ("sqlite", "rsyslog")}
)
# Questions asking for a list's members ("Which compression algorithms can borg use?"), one set per
# corpus (`list_questions.jsonl`'s `corpus`; `answers_all`: members of the manual's list).
SETS.update({f"list-{corpus}": (corpus, [DATA / "list_questions.jsonl"]) for corpus in EXAMPLE_CORPORA})
# Broad questions over the manuals ("Tell me about borg compact."), one set per corpus
# (`broad_questions.jsonl`'s `corpus`): stated when the summary cites only the file asked about.
SETS.update({f"broad-{corpus}": (corpus, [DATA / "broad_questions.jsonl"]) for corpus in EXAMPLE_CORPORA})
# ... and a second set, written after the twenty-first round's change to broad questions and
# before any run of it (`broad_questions_fresh.jsonl`).
SETS.update({f"broad2-{corpus}": (corpus, [DATA / "broad_questions_fresh.jsonl"]) for corpus in EXAMPLE_CORPORA})
# Questions a manual's FAQ answers, in a user's words (`faq_questions.jsonl`'s `corpus`).
SETS.update({f"faq-{corpus}": (corpus, [DATA / "faq_questions.jsonl"]) for corpus in EXAMPLE_CORPORA})
SETS.update(
    {
        name.replace(corpus, f"{corpus}-html", 1): (f"{corpus}-html", files)
        for name, (corpus, files) in list(SETS.items())
        if corpus in HTML_CORPORA
    }
)
# The Bash manuals of Debian's bash-doc (`corpora.py --bash`), the same questions over the HTML, the
# PDF and the package's folder as shipped (both formats of both manuals, and the examples): what
# PDF reading loses against HTML, and what copies of one manual in two formats cost the answer.
# A question's files are the manuals in the corpus's formats.
SETS.update({f"bash-{kind}": (f"bash-{kind}", [DATA / "bash_questions.jsonl"]) for kind in BASH_KINDS})
SETS["bash-symbols"] = ("bash-html", [DATA / "bash_symbols.jsonl"])
SETS["bash-symbols2"] = ("bash-html", [DATA / "bash_symbols2.jsonl"])
# The Z shell manual as zsh-doc ships it typeset (`zsh.pdf`, without the FAQ): the zsh sets'
# questions over the PDF ("zsh-pdf", "zsh-pdf-es", "zsh-pdf-es2"), what reading a PDF loses
# against the HTML pages (zsh-html). Questions answered in the FAQ alone count as missed.
SETS.update(
    {
        name.replace("zsh", "zsh-pdf", 1): ("zsh-pdf", files)
        for name, (corpus, files) in list(SETS.items())
        if corpus == "zsh" and name in ("zsh", "zsh-es", "zsh-es2")
    }
)
FIT_SETS = ("sample", "pydoc", "stdlib")
# default: the default mode as `ask` runs it (its prompt holds what DEFAULT_PROMPT_PASSAGES says);
# whole: the default mode with the whole excerpts in the prompt (`ask --whole-excerpts`);
# passages: with the excerpts' selected passages (`ask --passages`); trimmed: with the whole
# excerpts trimmed to their relevant sentences (`ask --trim --whole-excerpts`).
MODES = ("extractive", "default", "whole", "passages", "trimmed")


def load_set(name: str) -> list[dict[str, Any]]:
    rows = []
    for path in SETS[name][1]:
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.lstrip().startswith(("#", "//")):
                rows.append(json.loads(line))
    corpus = SETS[name][0]
    if name.startswith(
        ("compare-", "example-", "list-", "broad-", "broad2-", "faq-")
    ):  # one file for every corpus: its questions
        rows = [row for row in rows if row["corpus"] == corpus.removesuffix("-html") or row["corpus"] == corpus]
        for row in rows:
            if "answers_all" in row:
                row["answers"] = [a for group in row["answers_all"] for a in group]
    if corpus.startswith("bash-"):
        for row in rows:
            if row.get("answerable", True):
                row["files"] = list(BASH_MANUALS[corpus.removeprefix("bash-")])
    elif corpus == "zsh-pdf":
        for row in rows:
            if row.get("files"):
                row["files"] = ["zsh.pdf"]
    elif corpus.endswith("-html"):
        for row in rows:
            row["files"] = [f"{Path(f).stem}.html" for f in row.get("files", [])]
    return rows


# The writer of each corpus's folder (`<corpus>-corpus` in the work folder); a `<corpus>-html`
# set's is the same writer's, the pages copied as shipped.
_WRITERS = {
    "pydoc": write_pydoc_corpus,
    "borg": write_borg_corpus,
    "varnish": write_varnish_corpus,
    "postfix": write_postfix_corpus,
    "apache": write_apache_corpus,
    "sqlite": write_sqlite_corpus,
    "rsyslog": write_rsyslog_corpus,
    "zsh": write_zsh_corpus,
    "adoc": write_adoc_corpus,
    "filter-repo": write_filter_repo_corpus,
    "tig": write_tig_corpus,
    "manpages": write_manpages_corpus,
}


def corpus_dir(corpus: str, workdir: Path) -> Path:
    if corpus == "sample":
        return c.SAMPLE_DOCS
    if corpus == "stdlib":
        dest = workdir / "stdlib-corpus"
        return dest if dest.exists() and any(dest.iterdir()) else write_stdlib_corpus(dest)
    if corpus.startswith("bash-"):
        return write_bash_corpus(workdir / f"{corpus}-corpus", corpus.removeprefix("bash-"))
    if corpus == "zsh-pdf":
        return write_zsh_pdf_corpus(workdir / f"{corpus}-corpus")
    kind = corpus.removesuffix("-html")
    if kind != corpus:
        return _WRITERS[kind](workdir / f"{corpus}-corpus", html=True)
    return _WRITERS[corpus](workdir / f"{corpus}-corpus")


# The code an index's chunks and vectors come from (paths under the `locallens` package that is
# imported). Indexing is incremental: a file that did not change is not read again, so an index
# seeded by other readers, chunkers or headers keeps their text. The sample's seeded index kept the
# HTML page's breadcrumbs as its first heading for two rounds after the reader left out `<nav>`,
# and hid a refused broad question (docs/benchmarks.md#the-eighth-rounds-figures).
INDEX_CODE = (
    "readers",
    "chunking",
    "headers.py",
    "walk.py",
    "tokens.py",
    "text.py",
    "sentences.py",
    "config.py",
    "indexer.py",
    "embedding.py",
    "npbert.py",
    "onnx_encoder.py",
    "static_encoder.py",
)


def index_code_fingerprint() -> str:
    """A digest of `INDEX_CODE`'s sources, as the imported `locallens` has them."""
    import locallens

    package = Path(locallens.__file__).parent
    digest = hashlib.sha256()
    for name in INDEX_CODE:
        path = package / name
        for source in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            if source.is_file():
                digest.update(str(source.relative_to(package)).encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:16]


def build_index(corpus: str, workdir: Path) -> Path:
    from locallens.indexer import IndexRequest, index

    folder = corpus_dir(corpus, workdir)
    # The sample corpus is the checkout's own sample_docs/: each checkout (a "before" run with
    # PYTHONPATH at another one) gets its own index, or the two roots would both be searched.
    name = (
        corpus if folder.is_relative_to(workdir) else f"{corpus}-{hashlib.sha256(str(folder).encode()).hexdigest()[:8]}"
    )
    db = workdir / f"{name}.db"
    stamp, code = workdir / f"{name}.index-code", index_code_fingerprint()
    if db.exists() and (not stamp.exists() or stamp.read_text().strip() != code):
        # Built by other indexing code (or before the stamp was kept): built again, not reused.
        print(f"  .. {name}: the indexing code differs from the index's; indexing afresh", file=sys.stderr)
        for stale in workdir.glob(f"{name}.db*"):
            stale.unlink()
    # incremental: a second run costs a walk
    index(IndexRequest(paths=_roots(db, folder), db=db))
    stamp.write_text(code + "\n")
    return db


def _roots(db: Path, folder: Path) -> list[Path]:
    """What to index into `db`: `folder`, or the folders `db` was built from when they are still
    there. A workdir copied from another to reuse its indexes holds indexes of the other
    workdir's corpus folders: indexing this workdir's own folder into one would add a second root
    of the same pages, each page twice in the brain."""
    from locallens.forget import ForgetRequest, forget
    from locallens.storage import open_store

    if not db.exists():
        return [folder]
    with open_store(db) as store:
        roots = [Path(root) for root in store.roots(store.get_brain("default"))]
    # A root that is gone is forgotten; so are the others when this workdir's own folder is one
    # (a copied workdir indexed before this rule held both).
    kept = [folder] if folder.resolve() in {root.resolve() for root in roots} else [r for r in roots if r.is_dir()]
    dropped = [root for root in roots if root.resolve() not in {k.resolve() for k in kept}]
    if dropped:
        forget(ForgetRequest(paths=dropped, db=db))
    return kept or [folder]


class CachedLLM:
    """A loaded LocalLLM whose generations are kept in a JSONL file keyed by the prompt."""

    def __init__(self, llm: Any, cache: dict[str, dict[str, Any]], path: Path) -> None:
        self.llm, self.cache, self.path = llm, cache, path
        self.last_usage = None
        self.generated = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)

    def stream_chat(self, messages: list[Any], *, max_tokens: int, temperature: float = 0.0, grammar: Any = None):  # type: ignore[no-untyped-def]
        key = hashlib.sha256(
            json.dumps(
                [[m.role, m.content] for m in messages] + [max_tokens, temperature, grammar is not None]
            ).encode()
        ).hexdigest()
        item = self.cache.get(key)
        if item is None:
            started = time.perf_counter()
            text = "".join(
                self.llm.stream_chat(messages, max_tokens=max_tokens, temperature=temperature, grammar=grammar)
            )
            usage = self.llm.last_usage
            item = {
                "key": key,
                "text": text,
                "seconds": time.perf_counter() - started,
                "prompt_tokens": usage.prompt_tokens if usage else 0,
                "completion_tokens": usage.completion_tokens if usage else 0,
                "prompt_ms": usage.prompt_ms if usage else 0.0,
                "load": os.getloadavg()[0],
            }
            self.cache[key] = item
            self.generated += 1
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(item, ensure_ascii=False) + "\n")
        self.last_usage = SimpleNamespace(
            prompt_tokens=item["prompt_tokens"],
            completion_tokens=item["completion_tokens"],
            cached_tokens=0,
            # As measured when the generation was made (a cached one costs nothing now).
            prompt_ms=item.get("prompt_ms", 0.0),
            generate_ms=item["seconds"] * 1000 - item.get("prompt_ms", 0.0),
        )
        yield item["text"]


def cached_models(workdir: Path) -> Any:
    from locallens.models import WarmModels

    path = workdir / "generations.jsonl"
    cache: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            cache[item["key"]] = item

    class CachingModels(WarmModels):
        @contextmanager
        def llm(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
            with super().llm(*args, **kwargs) as llm:
                yield CachedLLM(llm, cache, path)

    return CachingModels()


MAX_TOKENS: int | None = None  # --max-tokens: the answer length asked (None: ask's default)


def request_for(question: str, db: Path, mode: str) -> Any:
    """`mode`: one of `MODES`."""
    from locallens.answer import AskRequest
    from locallens.config import DEFAULT_ASK_TRIM_WINDOW
    from locallens.retrieval import TrimSettings
    from locallens.storage import parse_db

    extra: dict[str, Any] = {}
    if mode in ("whole", "passages", "trimmed"):  # what the prompt holds, whatever `ask`'s default is
        extra["prompt_passages"] = mode == "passages"
    if mode == "trimmed":
        extra["trim"] = TrimSettings(enabled=True, window=DEFAULT_ASK_TRIM_WINDOW)
    if MAX_TOKENS is not None:
        extra["max_tokens"] = MAX_TOKENS
    return AskRequest(question=question, db=parse_db(db), extractive=mode == "extractive", **extra)


GIVEN_CHUNKS = 2  # es-given: how many chunks of the expected note go first
GIVEN_TOTAL = 5


def given_note_hits(row: dict[str, Any], db: Path, models: Any) -> tuple[list[Any], Any, Any]:
    """es-given: the expected note's best chunks first, then the retrieved excerpts of other
    files, the question's vector, and its English rendering (read beside it, as `ask` reads it)."""
    from dataclasses import replace

    from locallens.answer import ask

    request = request_for(row["question"], db, "extractive")
    note = ask(replace(request, context_only=True, path_glob=row["files"][0]), models)
    rest = ask(replace(request, context_only=True), models)
    others = [h for h in rest.sources if h.chunk.relative_path != row["files"][0]]
    hits = list(note.sources)[:GIVEN_CHUNKS] + others[: GIVEN_TOTAL - GIVEN_CHUNKS]
    return hits, rest.retrieval.query_vector, getattr(rest.retrieval, "rendering", None)


def ask_given(row: dict[str, Any], db: Path, models: Any) -> dict[str, Any]:
    """es-given: the extractive answer of `given_note_hits`, through the answer mode's own seam."""
    from locallens.answer import brain_term_counts
    from locallens.extractive import ExtractiveMode
    from locallens.modes import AnswerInput, AnswerOptions
    from locallens.retrieval import SentenceEncoder
    from locallens.storage import open_store, parse_db

    hits, vector, rendering = given_note_hits(row, db, models)
    with open_store(parse_db(db)) as store:
        brain = store.get_brain("default")
        given = AnswerInput(
            row["question"],
            hits,
            vector,
            SentenceEncoder(models.embedder(brain.model), store),
            models,
            AnswerOptions(),
            brain_term_counts(store, brain),
            rendering=rendering,
        )
        checked = ExtractiveMode().answer(given).checked
    claims = [
        {"supported": cl.supported, "citations": cl.citations, "extracted": True, "text": cl.text, "source": cl.source}
        for cl in checked.claims
    ]
    return {
        "answer": checked.answer,
        "refused": checked.refused,
        "claims": claims,
        "citations": sorted({n for cl in checked.claims for n in cl.citations}),
        "sources": [{"n": n, "path": h.chunk.relative_path, "content": h.content} for n, h in enumerate(hits, 1)],
        "timings": {"extract_ms": checked.check_ms},
    }


def words(text: str) -> int:
    return len(text.split())


def stated(row: dict[str, Any], data: dict[str, Any] | None, set_name: str) -> bool:
    """The printed answer states the expected answer (for broad questions: drawn from the file)."""
    from locallens.evaluation.metrics import contains_answer

    if data is None or data.get("refused"):
        return False
    if set_name == "broad" or not row.get("answers"):
        sources = {s["n"]: s["path"] for s in data["sources"]}
        cited = data.get("citations") or []
        return bool(cited) and all(sources.get(n) in row.get("files", []) for n in cited)
    answer = data.get("answer") or ""
    if row.get("answers_all"):  # a comparison: what it says of each thing compared
        return all(contains_answer(answer, group) for group in row["answers_all"])
    return contains_answer(answer, row["answers"])


def run(args: argparse.Namespace) -> dict[tuple[str, str], list[dict[str, Any]]]:
    from locallens.answer import ask

    try:
        from locallens.answer import notices_to_print
    except ImportError:  # an older checkout printed every notice

        def notices_to_print(data: dict[str, Any]) -> list[str]:
            return list(data.get("notices") or [])

    from locallens.errors import NothingFoundError

    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    models = cached_models(workdir)
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    dump = []
    try:
        for set_name in args.sets:
            rows = load_set(set_name)
            if args.subset:
                answerable = [r for r in rows if r.get("answerable", True)][: args.subset]
                rows = [r for r in rows if r in answerable or not r.get("answerable", True)]
            if set_name == "es-given":
                rows = [r for r in rows if r.get("answerable", True) and r.get("files")]
            if not rows:
                continue
            db = build_index(SETS[set_name][0], workdir)
            for mode in args.modes:
                if set_name == "es-given" and mode != "extractive":
                    continue
                out = results.setdefault((set_name, mode), [])
                for row in rows:
                    started = time.perf_counter()
                    try:
                        if set_name == "es-given":
                            data = ask_given(row, db, models)
                        else:
                            data = ask(request_for(row["question"], db, mode), models).as_json()
                    except NothingFoundError:
                        data = None
                    seconds = time.perf_counter() - started
                    answerable = row.get("answerable", True)
                    printed = (
                        [] if data is None or data.get("refused") else [cl for cl in data["claims"] if cl["supported"]]
                    )
                    out.append(
                        {
                            "question": row["question"],
                            "answerable": answerable,
                            "refused": data is None or bool(data.get("refused")),
                            "stated": answerable and stated(row, data, set_name),
                            "words": words(data.get("answer") or "") if printed else None,
                            "printed": len(printed),
                            "cited": sum(1 for cl in printed if cl["citations"]),
                            "seconds": seconds,
                            "answer_ms": (data or {}).get("timings", {}).get("extract_ms")
                            or (data or {}).get("timings", {}).get("check_ms"),
                            "prompt_tokens": (data or {}).get("tokens", {}).get("prompt", 0),
                            # The generation's own time (prefill + writing), as measured when it
                            # was made: a cached generation costs nothing in this run.
                            "prefill_ms": (data or {}).get("timings", {}).get("prompt_ms"),
                            "generation_s": (
                                ((data or {}).get("timings", {}).get("prompt_ms", 0.0) or 0.0)
                                + ((data or {}).get("timings", {}).get("generate_ms", 0.0) or 0.0)
                            )
                            / 1000
                            if (data or {}).get("timings", {}).get("generate_ms") is not None
                            else None,
                            "model_supported": sum(
                                1 for cl in (data or {}).get("claims", []) if cl["supported"] and not cl["extracted"]
                            ),
                            "model_sentences": sum(1 for cl in (data or {}).get("claims", []) if not cl["extracted"]),
                            "fallback": bool((data or {}).get("fallback")),
                            # What the check did (`--json`'s notices) and what `ask` prints of it on stderr.
                            "notices": (data or {}).get("notices", []),
                            "stderr_notes": notices_to_print(data) if data else [],
                        }
                    )
                    for cl in printed:
                        sources = {s["n"]: s for s in data["sources"]}
                        dump.append(
                            {
                                "set": set_name,
                                "mode": mode,
                                "question": row["question"],
                                "answerable": answerable,
                                "expected": row.get("answers"),
                                "sentence": cl["text"],
                                "source": sources[cl["source"]]["content"] if cl.get("source") in sources else None,
                            }
                        )
                    if args.verbose:
                        print(f"  [{set_name}/{mode}] {out[-1]['stated']!s:5} {row['question'][:70]}", file=sys.stderr)
    finally:
        models.close()
    if args.dump:
        Path(args.dump).write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in dump), encoding="utf-8")
    if args.save:
        Path(args.save).write_text(
            "".join(
                json.dumps({"set": set_name, "mode": mode, **row}, ensure_ascii=False) + "\n"
                for (set_name, mode), rows in results.items()
                for row in rows
            ),
            encoding="utf-8",
        )
    return results


def report(results: dict[tuple[str, str], list[dict[str, Any]]], label: str) -> None:
    header = (
        f"{'set':<8} {'mode':<10} {'stated':>9} {'false ref.':>10} {'unans. ref.':>11} {'cited':>9} "
        f"{'words p50':>9} {'ask ms p50':>10} {'answer ms p50':>13} {'model supp.':>11} {'fallback':>8} {'prompt tok':>10} "
        f"{'prefill ms':>10} {'gen s p50':>9}"
    )
    print(f"\n{label}")
    print(header)
    print("-" * len(header))
    for (set_name, mode), rows in results.items():
        answerable = [r for r in rows if r["answerable"]]
        unanswerable = [r for r in rows if not r["answerable"]]
        printed = sum(r["printed"] for r in rows if not r["refused"])
        cited = sum(r["cited"] for r in rows if not r["refused"])
        lengths = [r["words"] for r in rows if r["words"] is not None]
        answer_ms = [r["answer_ms"] for r in rows if r["answer_ms"] is not None]
        print(
            f"{set_name:<8} {mode:<10} {sum(r['stated'] for r in answerable):>4}/{len(answerable):<4} "
            f"{sum(r['refused'] for r in answerable):>4}/{len(answerable):<5} "
            f"{sum(r['refused'] for r in unanswerable):>5}/{len(unanswerable):<5} {cited:>4}/{printed:<4} "
            f"{(statistics.median(lengths) if lengths else 0):>9.0f} "
            f"{statistics.median(r['seconds'] for r in rows) * 1000:>10.0f} "
            f"{(statistics.median(answer_ms) if answer_ms else float('nan')):>13.1f} "
            f"{sum(r.get('model_supported', 0) for r in rows):>4}/{sum(r.get('model_sentences', 0) for r in rows):<6} "
            f"{sum(r.get('fallback', False) for r in rows):>8} "
            f"{statistics.median(r.get('prompt_tokens', 0) for r in rows):>10.0f} "
            f"{_median(r.get('prefill_ms') for r in rows):>10.0f} {_median(r.get('generation_s') for r in rows):>9.2f}"
        )


def _median(values: Any) -> float:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else float("nan")


def timing(args: argparse.Namespace) -> None:
    """Cold (a new `locallens ask` process) and warm (`ask` with the models kept) per mode."""
    from locallens.answer import ask
    from locallens.models import WarmModels

    workdir = Path(args.workdir)
    db = build_index("sample", workdir)
    questions = [r["question"] for r in load_set("sample") if r.get("answerable", True)][: args.timing]
    for mode in args.modes:
        flags = {
            "extractive": ["--extractive"],
            "passages": ["--passages"],
            "whole": ["--whole-excerpts"],
            "trimmed": ["--trim", "--whole-excerpts"],
        }.get(mode, [])
        cold = []
        for q in questions:
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "locallens", "ask", q, "--db", str(db), "--quiet", *flags],
                capture_output=True,
                env=os.environ,
                check=False,
            )
            cold.append(time.perf_counter() - started)
        models = WarmModels()
        warm, answer_ms = [], []
        try:
            ask(request_for(questions[0], db, mode), models)  # load once
            for q in questions:
                started = time.perf_counter()
                data = ask(request_for(q, db, mode), models).as_json()
                warm.append(time.perf_counter() - started)
                answer_ms.append(data["timings"].get("extract_ms") or data["timings"].get("check_ms") or 0.0)
        finally:
            models.close()
        print(
            f"timing {mode:<10} cold p50 {statistics.median(cold):.2f} s, warm p50 {statistics.median(warm) * 1000:.0f} ms, "
            f"answer stage warm p50 {statistics.median(answer_ms):.1f} ms ({len(questions)} questions)"
        )


# --------------------------------------------------------------------------------------------
# Fitting the unit scorer
# --------------------------------------------------------------------------------------------


@dataclass
class Context:
    """A question's excerpts as `ask --extractive` reads them, scored as `extractive_answer` scores
    them (the English rendering beside a Spanish question)."""

    hits: list[Any]
    rendering: Any
    scored: Any
    counts: Any  # the brain's word counts
    vector: Any = None  # the question's vector
    encode: Any = None  # the sentence encoder (through the index's sentence cache)


def fit_questions(set_names: tuple[str, ...], workdir: Path) -> Iterator[tuple[str, Path, dict[str, Any]]]:
    """(set, index, question) for the fits: es-given's answerable questions that name a file."""
    for set_name in set_names:
        rows = load_set(set_name)
        if set_name == "es-given":
            rows = [r for r in rows if r.get("answerable", True) and r.get("files")]
        if not rows:
            continue
        db = build_index(SETS[set_name][0], workdir)
        for row in rows:
            yield set_name, db, row


@contextmanager
def question_context(row: dict[str, Any], set_name: str, db: Path, models: Any) -> Iterator[Context | None]:
    """The excerpts `ask --extractive` reads for a question (es-given: its note's first), scored;
    None when nothing is found. The index stays open inside the block: the word counts read it."""
    from dataclasses import replace

    import numpy as np

    from locallens.answer import ask, brain_term_counts
    from locallens.errors import NothingFoundError
    from locallens.extractive import score_units, with_rendering
    from locallens.retrieval import SentenceEncoder
    from locallens.storage import open_store

    rendering = None
    try:
        if set_name == "es-given":
            hits, vector, rendering = given_note_hits(row, db, models)
        else:
            result = ask(replace(request_for(row["question"], db, "extractive"), context_only=True), models)
            hits, vector = list(result.sources), result.retrieval.query_vector
            rendering = getattr(result.retrieval, "rendering", None)
    except NothingFoundError:
        yield None
        return
    with open_store(db) as store:
        brain = store.get_brain("default")
        encode = SentenceEncoder(models.embedder(brain.model), store)
        counts = brain_term_counts(store, brain)
        scored = score_units(row["question"], hits, np.asarray(vector), encode, counts)
        if rendering is not None and rendering.vector is not None:
            scored = with_rendering(scored, score_units(rendering.text, hits, rendering.vector, encode, counts))
        yield Context(hits, rendering, scored, counts, np.asarray(vector), encode)


def _examples(args: argparse.Namespace, set_names: tuple[str, ...]) -> list[dict[str, Any]]:
    """Per question: its units' feature rows, which units state the answer, whether its excerpts
    hold an expected answer, and its set."""

    import numpy as np

    from locallens.evaluation.metrics import contains_answer
    from locallens.models import WarmModels
    from locallens.unit_scores import features, question_terms
    from locallens.units import HEADING

    workdir = Path(args.workdir)
    models = WarmModels()
    out = []
    for set_name, db, row in fit_questions(set_names, workdir):
        with question_context(row, set_name, db, models) as found:
            if found is None:
                continue
            hits, scored = found.hits, found.scored
            terms = question_terms(row["question"], found.counts)
        units = scored.units
        if not units:
            continue
        x = features(terms, units, scored.cosines, [h.chunk.relative_path for h in hits], [h.score for h in hits])
        answers = row.get("answers")
        y = np.array(
            [c.states_answer(u, units, answers) for u in units],
            dtype=np.float64,
        )
        usable = np.array([u.kind != HEADING for u in units])
        out.append(
            {
                "set": set_name,
                "question": row["question"],
                "answerable": row.get("answerable", True),
                "held": bool(answers) and contains_answer("\n".join(h.content for h in hits), answers),
                "x": x[usable],
                "y": y[usable],
            }
        )
    models.close()
    return out


def _fit(x: Any, y: Any, l2: float = 1.0, iterations: int = 50) -> tuple[Any, float]:
    """Logistic regression by Newton's method with an L2 penalty (the bias unpenalised)."""
    import numpy as np

    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    penalty = np.eye(xb.shape[1]) * l2
    penalty[-1, -1] = 0.0
    # Positives are rare (a few per question): weigh them up to balance the classes.
    weight = np.where(y > 0, max(1.0, (len(y) - y.sum()) / max(1.0, y.sum())), 1.0)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        grad = xb.T @ (weight * (p - y)) + penalty @ w
        hess = (xb * (weight * p * (1 - p))[:, None]).T @ xb + penalty
        w -= np.linalg.solve(hess, grad)
    return w[:-1], float(w[-1])


def _fit_rank(examples: list[dict[str, Any]], columns: list[int], l2: float = 0.05, steps: int = 400) -> Any:
    """Weights that rank a question's answering units first: a conditional logit (softmax over
    each question's units, maximising the probability of its answering ones), L2-penalised."""
    import numpy as np

    usable = [ex for ex in examples if ex["answerable"] and ex["y"].any()]
    w = np.zeros(len(columns))
    lr = 0.5
    for _ in range(steps):
        grad = l2 * w
        for ex in usable:
            x = ex["x"][:, columns]
            s = x @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            r = p * ex["y"]
            r /= r.sum()
            grad += x.T @ (p - r) / len(usable)
        w -= lr * grad
    return w


def _top1(examples: list[dict[str, Any]], w: Any, b: float, columns: list[int]) -> float:
    hits = 0
    total = 0
    for ex in examples:
        if not ex["answerable"] or not ex["y"].any():
            continue
        total += 1
        scores = ex["x"][:, columns] @ w + b
        hits += bool(ex["y"][int(scores.argmax())])
    return hits / max(1, total)


def fit(args: argparse.Namespace) -> None:
    import numpy as np

    from locallens.unit_scores import BIAS, FEATURES, WEIGHTS

    if args.refusal_only:
        refusal_fit(args)
        return
    fit_sets = tuple(name for name in FIT_SETS if name in args.sets)
    examples = _examples(args, fit_sets)
    train = [ex for ex in examples if ex["answerable"]]
    y = np.concatenate([ex["y"] for ex in train])
    all_cols = list(range(len(FEATURES)))
    w = _fit_rank(train, all_cols)
    b = 0.0
    reachable = sum(1 for ex in train if ex["y"].any())
    print(f"\nfit on {len(train)} answerable questions ({reachable} with the answer in some unit), {len(y)} units")
    print("weights: " + ", ".join(f"{n} {v:+.2f}" for n, v in zip(FEATURES, w)) + f", bias {b:+.2f}")
    current = np.array([WEIGHTS[n] for n in FEATURES])
    print(
        f"best unit states the answer (of questions where some unit does): fitted {_top1(train, w, b, all_cols):.3f}, "
        f"shipped weights {_top1(train, current, BIAS, all_cols):.3f}, cosine alone {_top1(train, np.array([1.0]), 0.0, [0]):.3f}"
    )
    for k, name in enumerate(FEATURES):
        cols = [j for j in all_cols if j != k]
        print(f"  without {name:<15} {_top1(train, _fit_rank(train, cols), 0.0, cols):.3f}")
    scorer_transfer(args, examples)
    refusal_fit(args)


# The scorer judged by leave-one-corpus-out: these sets' answerable questions, each corpus
# fitted without and measured (`scorer_transfer`).
TRANSFER_SETS = ("sample", "es-given", "pydoc", "stdlib", "borg", "postfix", "apache")
# Five signals that held up with a corpus left out on sample, pydoc, stdlib and borg, and lost on
# postfix and apache (docs/benchmarks.md#the-scorer-with-a-corpus-left-out): measured, not shipped.
FIVE = ("cosine", "terms", "short", "salient_terms", "type_miss")


def scorer_transfer(args: argparse.Namespace, examples: list[dict[str, Any]] | None = None) -> None:
    """Per corpus, "the best unit states the answer" (of its questions where some unit does)
    with the shipped weights, and with weights fitted on every corpus (in-sample) and fitted
    without that corpus (left out), for the twelve signals, five of them (`FIVE`), and the twelve
    without each one."""
    import numpy as np

    from locallens.unit_scores import BIAS, FEATURES, WEIGHTS

    have = {ex["set"] for ex in examples or []}
    wanted = tuple(name for name in TRANSFER_SETS if name in args.sets and name in SETS and name not in have)
    rows = [ex for ex in (examples or []) if ex["set"] in TRANSFER_SETS] + _examples(args, wanted)
    rows = [ex for ex in rows if ex["answerable"]]
    corpora = list(dict.fromkeys(SETS[ex["set"]][0] for ex in rows))

    def of(corpus: str, inside: bool) -> list[dict[str, Any]]:
        return [ex for ex in rows if (SETS[ex["set"]][0] == corpus) == inside]

    def reachable(test: list[dict[str, Any]]) -> int:
        return sum(1 for ex in test if ex["y"].any())

    def line(label: str, cols: list[int]) -> None:
        w_all = _fit_rank(rows, cols)
        cells, hit_in, hit_out, total = [], 0, 0, 0
        for corpus in corpora:
            test = of(corpus, True)
            n = reachable(test)
            a = round(_top1(test, w_all, 0.0, cols) * n)
            b = round(_top1(test, _fit_rank(of(corpus, False), cols), 0.0, cols) * n)
            cells.append(f"{corpus} {a}/{b}/{n}")
            hit_in, hit_out, total = hit_in + a, hit_out + b, total + n
        print(f"  {label:<30} {'  '.join(cells)}   all {hit_in / total:.3f} / left out {hit_out / total:.3f}")

    every = list(range(len(FEATURES)))
    print(f"\nthe scorer with a corpus left out ({len(rows)} answerable questions of {', '.join(corpora)});")
    print("  cells: corpus  fitted on all / fitted without it / questions where some unit states the answer")
    shipped = np.array([WEIGHTS[n] for n in FEATURES])
    cells = [f"{c} {round(_top1(of(c, True), shipped, BIAS, every) * reachable(of(c, True)))}" for c in corpora]
    print(f"  {'shipped (sample, pydoc, stdlib)':<30} {'  '.join(cells)}   all {_top1(rows, shipped, BIAS, every):.3f}")
    line("twelve signals, refitted", every)
    line("five signals, refitted", [FEATURES.index(n) for n in FIVE])
    for k, name in enumerate(FEATURES):
        line(f"twelve without {name}", [j for j in every if j != k])


# --------------------------------------------------------------------------------------------
# Fitting the refusal, judged corpus by corpus
# --------------------------------------------------------------------------------------------

# The sets the refusal is fitted on and judged by. Each set belongs to its corpus (`SETS`), and
# every corpus is left out in turn (`refusal_loco`): fitted on the others, judged on it. Sets
# whose data is missing are skipped. Varnish (a held-out corpus until the fifth 2026-12-04 round)
# and zsh joined them in that round; the shipped weights were fitted before (decisions.md).
REFUSAL_SETS = (
    "sample",
    "broad",
    "es",
    "es-given",
    "pydoc",
    "pydoc-es",
    "stdlib",
    "borg",
    "postfix",
    "postfix-es",
    "apache",
    "apache-es",
    "varnish",
    "varnish-es",
    "zsh",
    "zsh-es",
)
SPANISH_SETS = frozenset({"es", "es-given", "pydoc-es", "postfix-es", "apache-es", "varnish-es", "zsh-es"})
# Answerable questions the fit leaves out: es's, whose excerpts mostly hold no answer (Spanish
# notes, the English one not retrieved: neither refusing nor answering them says what the
# refusal should do; es-given asks them with their note). They are still counted when judged.
UNFITTED_ANSWERABLE = frozenset({"es"})
REFUSAL_L2 = 0.1  # the logistic's L2 penalty
REFUSAL_CAP = 0.05  # the threshold refuses at most this share of the fitting answerable questions
THRESHOLDS = tuple(round(0.2 + 0.025 * k, 3) for k in range(29))
# How much lower a new corpus's cosines may run than those fitted on (the medians of the top
# excerpt's score over the answerable questions of the fitting corpora span 0.53-0.60).
SHIFT = -0.1


def _candidate_evidence(text: str, hits: list[Any], scored: Any, counts: Any) -> dict[str, float]:
    """Evidence measured beside `extractive.EVIDENCE_SIGNALS`, so that the variants
    `refusal_fit` compares stay measurable: the question's words held by the excerpts
    (`salient_coverage`) and by the best unit with what introduces it (`best_unit_salient`),
    each word weighed by its rarity in the brain."""
    import numpy as np

    from locallens import extractive as ex
    from locallens.unit_scores import context_of, key_terms, key_words, word_salience

    def weighted_share(keys_held: frozenset[str]) -> float:
        words = key_words(text)
        if ex._across(text, hits):
            held, missing = ex._held(hits), set(ex.missing_words(text, hits))
            words = {k: w for k, w in words.items() if k in held or w in missing}
        if not words:
            return 1.0
        salience = word_salience(list(words.values()), counts)
        total = sum(salience.values())
        if total <= 0:
            return sum(1 for k in words if k in keys_held) / len(words)
        return sum(salience[w] for k, w in words.items() if k in keys_held) / total

    out = {"salient_coverage": weighted_share(ex._held(hits)), "best_unit_salient": 0.0}
    if scored.units:
        i = int(np.argmax(scored.scores))
        unit = scored.units[i]
        around = [unit.text, *context_of(unit, scored.units, hits[unit.excerpt - 1].chunk.relative_path)]
        if i and scored.units[i - 1].excerpt == unit.excerpt:
            around.append(scored.units[i - 1].text)
        out["best_unit_salient"] = weighted_share(key_terms(" ".join(around)))
    return out


def _route(question: str, hits: Any, scored: Any, counts: Any) -> str:
    """How `extractive_answer` routes `question`: "summary" (a broad question summarised),
    "topic" (a broad question no unit covers), "evidence" (the refusal's evidence decides) or
    "nothing" (no unit to print)."""
    from locallens import extractive as ex
    from locallens.broad import is_broad, topic_words

    topic = is_broad(question)
    if topic and ex.missing_salience(topic_words(topic), hits, counts) >= ex.MIN_TOPIC_SALIENCE:
        topic = None
    if topic and ex.summary_units(topic, scored, hits, passage_tokens=ex.SUMMARY_TOKENS):
        return "summary"
    if topic and not ex._states_topic(topic, scored):
        return "topic"
    return "evidence" if scored.units else "nothing"


def _refusal_cases(args: argparse.Namespace, set_names: tuple[str, ...]) -> list[dict[str, Any]]:
    """Per question of `set_names`: its set and corpus, whether it is answerable and its excerpts
    hold an expected answer, and how `extractive.extractive_answer` decides it (`route`): a
    broad question's summary (answered), a broad question no excerpt covers (refused), nothing
    found (refused), or by the evidence, when `readings` holds the evidence of each text it
    weighs (`extractive.evidence_readings`: the question, and its English rendering)."""

    from locallens import extractive as ex
    from locallens.evaluation.metrics import contains_answer
    from locallens.models import WarmModels

    workdir = Path(args.workdir)
    models = WarmModels()
    out: list[dict[str, Any]] = []
    try:
        for set_name, db, row in fit_questions(set_names, workdir):
            case: dict[str, Any] = {
                "set": set_name,
                "corpus": SETS[set_name][0],
                "question": row["question"],
                "answerable": row.get("answerable", True),
                "held": False,
                "route": "nothing",
                "readings": [],
            }
            out.append(case)
            with question_context(row, set_name, db, models) as found:
                if found is None:
                    continue
                hits, scored, counts = found.hits, found.scored, found.counts
                answers = row.get("answers")
                case["held"] = bool(answers) and contains_answer("\n".join(h.content for h in hits), answers)
                case["route"] = _route(row["question"], hits, scored, counts)
                if case["route"] == "evidence":
                    readings = ex.evidence_readings(row["question"], hits, found.rendering)
                    evidence = ex.readings_evidence(
                        row["question"], hits, scored, counts, found.rendering, names=ex.EVIDENCE_SIGNALS
                    )
                    case["readings"] = [
                        _candidate_evidence(text, hits, scored, counts) | found_evidence
                        for (text, _), found_evidence in zip(readings, evidence, strict=True)
                    ]
    finally:
        models.close()
    return out


def _gated(reading: dict[str, float]) -> bool:
    """Refused whatever the weights (`extractive.refused_whatever`)."""
    from locallens.extractive import refused_whatever

    return refused_whatever(reading)


def _probability(reading: dict[str, float], names: list[str], w: Any, bias: float) -> float:
    """`extractive.answer_evidence` with these weights."""
    import math

    if _gated(reading):
        return 0.0
    z = sum(float(w[k]) * reading[n] for k, n in enumerate(names)) + bias
    return 1 / (1 + math.exp(-z))


def _evidence_p(case: dict[str, Any], names: list[str], w: Any, bias: float) -> float:
    return max(_probability(r, names, w, bias) for r in case["readings"])


def _fitted(case: dict[str, Any]) -> bool:
    """Whether the fit weighs `case`: decided by the evidence, not refused whatever the weights
    (`_gated`), and not one of `UNFITTED_ANSWERABLE`."""
    return (
        case["route"] == "evidence"
        and not all(_gated(r) for r in case["readings"])
        and not (case["answerable"] and case["set"] in UNFITTED_ANSWERABLE)
    )


def fit_refusal(cases: list[dict[str, Any]], names: list[str], l2: float = REFUSAL_L2) -> tuple[Any, float]:
    """The logistic over `names` on the questions the evidence decides (`_fitted`). A question
    read twice (a Spanish one and its English rendering) is fitted on the reading the weights
    take (the stronger): first the question's own, then, twice, the one the last fit takes."""
    import numpy as np

    rows = [x for x in cases if _fitted(x)]
    target = np.array([1.0 if x["answerable"] else 0.0 for x in rows])
    w: Any = None
    bias = 0.0
    for _ in range(3):
        chosen = [
            next(r for r in x["readings"] if not _gated(r))
            if w is None
            else max(x["readings"], key=lambda r: _probability(r, names, w, bias))
            for x in rows
        ]
        w, bias = _fit(np.array([[r[n] for n in names] for r in chosen]).reshape(-1, len(names)), target, l2=l2)
    return w, bias


def _refused(case: dict[str, Any], names: list[str], w: Any, bias: float, threshold: float) -> bool:
    if case["route"] == "summary":
        return False
    if case["route"] != "evidence":
        return True
    return _evidence_p(case, names, w, bias) < threshold


def choose_threshold(
    cases: list[dict[str, Any]], names: list[str], w: Any, bias: float, cap: float = REFUSAL_CAP
) -> float:
    """The threshold (of `THRESHOLDS`) that refuses most unanswerable questions of `cases` while
    refusing at most `cap` of their answerable ones (the highest such, on a tie: the lowest)."""
    rows = [(_evidence_p(x, names, w, bias), x["answerable"]) for x in cases if _fitted(x)]
    answerable = sum(1 for _, a in rows if a)
    best: tuple[int, float] | None = None
    for t in THRESHOLDS:
        if sum(1 for p, a in rows if a and p < t) > cap * answerable:
            continue
        refused = sum(1 for p, a in rows if not a and p < t)
        if best is None or refused > best[0]:
            best = (refused, t)
    return best[1] if best else THRESHOLDS[0]


def refusal_tally(
    cases: list[dict[str, Any]], names: list[str], w: Any, bias: float, threshold: float
) -> dict[str, list[int]]:
    """Per set: [answerable refused, answerable, unanswerable refused, unanswerable]."""
    out: dict[str, list[int]] = {}
    for case in cases:
        refused = _refused(case, names, w, bias, threshold)
        row = out.setdefault(case["set"], [0, 0, 0, 0])
        k = 0 if case["answerable"] else 2
        row[k] += refused
        row[k + 1] += 1
    return out


def _totals(tally: dict[str, list[int]], sets: Any = None) -> list[int]:
    rows = [v for s, v in tally.items() if sets is None or s in sets]
    return [sum(r[k] for r in rows) for k in range(4)]


def _figures(row: list[int]) -> str:
    return f"false refusals {row[0]:>2}/{row[1]:<3} near misses refused {row[2]:>2}/{row[3]:<2}"


def _shifted(case: dict[str, Any], shift: float) -> dict[str, Any]:
    """`case` as if its corpus's cosines ran `shift` higher: the top excerpt's score, the best
    unit's cosine, and the best unit's linear score by the unit scorer's cosine weight (the gap
    between excerpts' scores does not move)."""
    from locallens.unit_scores import WEIGHTS

    moved = {"top_score": shift, "best_cosine": shift, "best_unit": WEIGHTS["cosine"] * shift}
    readings = [{k: v + moved.get(k, 0.0) for k, v in r.items()} for r in case["readings"]]
    return case | {"readings": readings}


def refusal_loco(
    cases: list[dict[str, Any]],
    names: list[str],
    l2: float = REFUSAL_L2,
    cap: float = REFUSAL_CAP,
    shift: float = 0.0,
) -> tuple[dict[str, list[int]], dict[str, float]]:
    """Leave one corpus out: for each corpus, the weights and threshold fitted on the others
    (`fit_refusal`, `choose_threshold`), judged on its sets (their cosines moved by `shift`,
    `_shifted`: a corpus whose cosines run lower than every fitted one). Per set, its figures as
    `refusal_tally` counts them; per corpus, the threshold chosen without it."""
    tally: dict[str, list[int]] = {}
    thresholds: dict[str, float] = {}
    for corpus in dict.fromkeys(x["corpus"] for x in cases):
        train = [x for x in cases if x["corpus"] != corpus]
        w, bias = fit_refusal(train, names, l2)
        thresholds[corpus] = choose_threshold(train, names, w, bias, cap)
        test = [_shifted(x, shift) if shift else x for x in cases if x["corpus"] == corpus]
        tally |= refusal_tally(test, names, w, bias, thresholds[corpus])
    return tally, thresholds


def refusal_variants(shipped: list[str]) -> list[tuple[str, list[str], float, float]]:
    """The evidence compared by `refusal_fit`: (label, features, L2, cap)."""
    before = ["best_unit", "term_coverage", "top_score", "missing", "fact_far", "missing_name", "fact_unstated"]
    core = ["best_unit", "missing", "missing_name", "fact_unstated"]
    variants = [
        (
            "before: best unit, term coverage, top score, missing, fact far, missing name, fact unstated",
            before,
            0.1,
            0.05,
        ),
        ("before, L2 1", before, 1.0, 0.05),
        ("before without the top score", [n for n in before if n != "top_score"], 0.1, 0.05),
        ("before, the top score's gap to the last for the top score", [*before[:2], "top_gap", *before[3:]], 0.1, 0.05),
        ("core: best unit, missing word, missing name, fact unstated (shipped)", core, 0.1, 0.05),
        ("core + top score", [*core, "top_score"], 0.1, 0.05),
        ("core + top score's gap to the last", [*core, "top_gap"], 0.1, 0.05),
        ("core + top score's gap to the last, L2 1", [*core, "top_gap"], 1.0, 0.05),
        ("core + top score's gap to the last, at most 3% refused", [*core, "top_gap"], 0.1, 0.03),
        ("core + best unit's cosine", [*core, "best_cosine"], 0.1, 0.05),
        ("core + top score + best unit's cosine", [*core, "top_score", "best_cosine"], 0.1, 0.05),
        ("core + key terms held, by rarity", [*core, "salient_coverage"], 0.1, 0.05),
        ("core + key terms the best unit holds, by rarity", [*core, "best_unit_salient"], 0.1, 0.05),
        ("core, L2 1", core, 1.0, 0.05),
        ("core, at most 3% refused", core, 0.1, 0.03),
    ]
    if not any(names == shipped for _, names, l2, cap in variants if l2 == REFUSAL_L2 and cap == REFUSAL_CAP):
        variants.append(("shipped", shipped, REFUSAL_L2, REFUSAL_CAP))
    return variants


def refusal_fit(args: argparse.Namespace) -> None:
    """The refusal's evidence compared by leave-one-corpus-out (`refusal_loco`) over
    `REFUSAL_SETS`, then the shipped evidence (`extractive.EVIDENCE_WEIGHTS`' features) fitted
    on every corpus: its weights and threshold (`SHIPPABLE`)."""
    from locallens.extractive import EVIDENCE_WEIGHTS

    set_names = tuple(name for name in REFUSAL_SETS if name in args.sets and name in SETS and load_set(name))
    cases = _refusal_cases(args, set_names)
    if args.dump:
        Path(args.dump).write_text(
            "".join(
                json.dumps(
                    {k: x[k] for k in ("set", "question", "answerable", "held", "route")}
                    | {"readings": [{k: round(float(v), 4) for k, v in r.items()} for r in x["readings"]]},
                    ensure_ascii=False,
                )
                + "\n"
                for x in cases
            ),
            encoding="utf-8",
        )
    shipped = list(EVIDENCE_WEIGHTS)
    spanish = [s for s in set_names if s in SPANISH_SETS]
    print(
        f"\nthe refusal, leave one corpus out over {', '.join(set_names)} ({len(cases)} questions; "
        f"a broad question summarised is answered whatever the evidence)"
    )
    print(
        "pooled figures of each corpus fitted without it; Spanish sets apart; pooled again with the "
        f"left-out corpus's cosines {SHIFT:+.2f} (`_shifted`)"
    )
    for label, names, l2, cap in refusal_variants(shipped):
        tally, _ = refusal_loco(cases, names, l2, cap)
        moved, _ = refusal_loco(cases, names, l2, cap, SHIFT)
        print(
            f"  {_figures(_totals(tally))} | Spanish {_figures(_totals(tally, spanish))} | "
            f"cosines moved: {_figures(_totals(moved))} | {label}"
        )
    tally, thresholds = refusal_loco(cases, shipped)
    print("\nthe shipped evidence, each corpus fitted without it (threshold chosen without it):")
    for set_name, row in tally.items():
        corpus = SETS[set_name][0]
        print(f"  {set_name:<10} {_figures(row)}  (threshold {thresholds[corpus]:.3f})")
    w, bias = fit_refusal(cases, shipped)
    threshold = choose_threshold(cases, shipped, w, bias)
    print(
        f"\nfitted on every corpus ({sum(1 for x in cases if _fitted(x))} questions decided by the evidence): "
        + ", ".join(f"{n} {v:+.2f}" for n, v in zip(shipped, w))
        + f", bias {bias:+.2f}, threshold {threshold:.3f}"
    )
    print("  threshold: false refusals, near misses refused (all sets, fitted on them)")
    for t in (0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8):
        print(f"  {t:.2f}: {_figures(_totals(refusal_tally(cases, shipped, w, bias, t)))}")
    for set_name, row in refusal_tally(cases, shipped, w, bias, threshold).items():
        print(f"  {set_name:<10} {_figures(row)}")
    weights = dict(zip(shipped, map(float, w.round(2))))
    print("SHIPPABLE " + json.dumps({"weights": weights, "bias": round(float(bias), 2), "threshold": threshold}))


# --------------------------------------------------------------------------------------------
# Where the answer was when the passage did not state it (`--diagnose`)
# --------------------------------------------------------------------------------------------


def _distinct_rank(scored: Any, i: int) -> int:
    """Unit i's rank (from 1) by score among the excerpts' distinct printed texts (overlapping
    chunks repeat units)."""
    import numpy as np

    from locallens.extractive import _text_key

    seen: set[str] = set()
    rank = 0
    for j in np.argsort(-scored.scores, kind="stable"):
        key = _text_key(scored.units[int(j)])
        if key in seen:
            continue
        seen.add(key)
        rank += 1
        if int(j) == i or key == _text_key(scored.units[i]):
            return rank
    return rank


def why_not_printed(scored: Any, i: int, printed: list[Any]) -> str:
    """Why the answering unit i was not in the passage, by the passage's own rules
    (`extractive.passage_units`): its rank, the score floor, the margins, or the slots and budget."""
    from locallens.extractive import CANDIDATES, MARGIN, MIN_ANSWER_SCORE, OTHER_MARGIN

    score = float(scored.scores[i])
    best = float(scored.scores.max())
    unit = scored.units[i]
    if score <= 0:
        return "scored 0 (title, cut or too long)"
    if _distinct_rank(scored, i) > CANDIDATES:
        return f"ranks below {CANDIDATES}"
    if score < MIN_ANSWER_SCORE:
        return f"under the {MIN_ANSWER_SCORE} floor"
    new_excerpt = unit.excerpt not in {u.excerpt for u in printed}
    if best - score > (OTHER_MARGIN if new_excerpt else MARGIN):
        return "outside OTHER_MARGIN (other excerpt)" if new_excerpt else "outside MARGIN (same excerpt)"
    return "slots or budget"


def diagnose(args: argparse.Namespace) -> None:
    """For every answerable question whose `ask --extractive` passage neither states the expected
    answer nor refuses: whether some unit of the 5 excerpts (read with what belongs to it) holds an
    expected answer; the best such unit's rank by the unit score, its excerpt, kind and score
    against the printed best unit's; why the passage left it out (`why_not_printed`); and the
    signals that put it below the printed one (weight x difference, the largest deficits). Then
    the causes tallied per set. `--save F` writes one JSON row per question."""
    import numpy as np

    from locallens.evaluation.metrics import contains_answer
    from locallens.extractive import extractive_answer
    from locallens.models import WarmModels
    from locallens.unit_scores import FEATURES, WEIGHTS, answer_type, features, key_terms, question_terms

    w = np.array([WEIGHTS[n] for n in FEATURES])
    models = WarmModels()
    rows_out: list[dict[str, Any]] = []
    cache: list[dict[str, Any]] = []
    tally: dict[str, dict[str, int]] = {}
    totals: dict[str, list[int]] = {}
    for set_name, db, row in fit_questions(tuple(args.sets), Path(args.workdir)):
        answers = row.get("answers")
        if not row.get("answerable", True) or not answers:
            continue  # broad questions are judged by the file they cite, not by a string
        q = row["question"]
        with question_context(row, set_name, db, models) as found:
            if found is None:
                continue
            hits, scored = found.hits, found.scored
            checked = extractive_answer(
                q, hits, found.vector, found.encode, term_counts=found.counts, rendering=found.rendering
            )
            terms = question_terms(q, found.counts)
            paths = [h.chunk.relative_path for h in hits]
            retrieval = [h.score for h in hits]
            if args.cache:
                # Every question's scored units and feature rows (the rendering's too), so that
                # passage rules and weights can be replayed offline (`--replay`).
                from locallens.extractive import score_units

                readings = [(terms, score_units(q, hits, found.vector, found.encode, found.counts).cosines)]
                if found.rendering is not None and found.rendering.vector is not None:
                    rendered = score_units(
                        found.rendering.text, hits, found.rendering.vector, found.encode, found.counts
                    )
                    readings.append((question_terms(found.rendering.text, found.counts), rendered.cosines))
                cache.append(
                    {
                        "set": set_name,
                        "question": q,
                        "answers": answers,
                        "refused": checked.refused,
                        "summary": checked.summary,
                        "answer": checked.answer,
                        "units": scored.units,
                        "scores": scored.scores,
                        "zeroed": scored.scores <= 0,
                        "x": [features(t, scored.units, cos, paths, retrieval) for t, cos in readings],
                        "wants": [t.wants for t, _ in readings],
                        "terms": [t for t, _ in readings],
                        "paths": paths,
                        "chunks": [h.chunk.chunk_index for h in hits],
                        "retrieval": retrieval,
                        "cosines": [cos for _, cos in readings],
                        "sections": [u.section for u in scored.units],
                        "held": contains_answer("\n".join(h.content for h in hits), answers),
                    }
                )
        counts = totals.setdefault(set_name, [0, 0, 0])
        counts[0] += 1
        if checked.refused:
            counts[1] += 1
            continue
        if contains_answer(checked.answer, answers):
            counts[2] += 1
            continue
        units = scored.units
        printed_keys = {c.written for c in checked.claims}
        printed = [u for u in units if u.text in printed_keys]
        best_i = int(np.argmax(scored.scores))
        out: dict[str, Any] = {"set": set_name, "question": q, "answers": answers}
        positive = [i for i, u in enumerate(units) if c.states_answer(u, units, answers)]
        if not positive:
            held = contains_answer("\n".join(h.content for h in hits), answers)
            cause = "in the excerpts, in no unit" if held else "not in the 5 excerpts"
        else:
            i = max(positive, key=lambda k: float(scored.scores[k]))
            unit = units[i]
            x = features(terms, units, scored.cosines, paths, retrieval)
            deficit = w * (x[i] - x[best_i])
            order = np.argsort(deficit)
            rare = {k for k, v in (terms.salience or {}).items() if v >= 0.5} or set(terms.terms)
            own = key_terms(unit.text)
            cause = why_not_printed(scored, i, printed)
            out.update(
                rank=_distinct_rank(scored, i),
                excerpt=unit.excerpt,
                kind=unit.kind,
                score=round(float(scored.scores[i]), 3),
                best=round(float(scored.scores[best_i]), 3),
                best_excerpt=units[best_i].excerpt,
                best_kind=units[best_i].kind,
                wants=answer_type(q),
                deficits=[f"{FEATURES[k]} {deficit[k]:+.2f}" for k in order[:2] if deficit[k] < -0.05],
                rare_in_section=bool((key_terms(unit.section) - own) & rare),
                rare_in_term=bool((key_terms(unit.term) - own) & rare) if unit.term else False,
                unit=unit.text[:160],
                printed=" | ".join(u.text[:80] for u in printed)[:240],
            )
        out["cause"] = cause
        rows_out.append(out)
        tally.setdefault(cause, {}).setdefault(set_name, 0)
        tally[cause][set_name] += 1
        if args.verbose:
            print(json.dumps(out, ensure_ascii=False), file=sys.stderr)
    models.close()
    sets = list(totals)
    print("\nanswerable questions with an answer string: asked / refused / stated, per set")
    for name in sets:
        print(f"  {name:<11} {totals[name][0]:>3} / {totals[name][1]:>2} / {totals[name][2]:>3}")
    print("\nnot stated, not refused: where the answer was and why the passage left it out")
    print(f"{'cause':<40}" + "".join(f"{n[:10]:>11}" for n in sets) + f"{'all':>6}")
    for cause, per in sorted(tally.items(), key=lambda kv: -sum(kv[1].values())):
        print(f"{cause:<40}" + "".join(f"{per.get(n, 0):>11}" for n in sets) + f"{sum(per.values()):>6}")
    placed = [r for r in rows_out if "rank" in r]
    if placed:
        print("\nthe answering unit, where placed (rank / excerpt / kind / the signals it lost by):")
        for key in ("rank", "excerpt", "kind", "best_kind", "wants"):
            values: dict[str, int] = {}
            for r in placed:
                values[str(r[key])] = values.get(str(r[key]), 0) + 1
            print(f"  {key:<10} " + ", ".join(f"{k} {v}" for k, v in sorted(values.items(), key=lambda kv: -kv[1])))
        lost: dict[str, int] = {}
        for r in placed:
            for d in r["deficits"][:1]:
                lost[d.split()[0]] = lost.get(d.split()[0], 0) + 1
        print("  largest deficit: " + ", ".join(f"{k} {v}" for k, v in sorted(lost.items(), key=lambda kv: -kv[1])))
        print(
            f"  rare question word in the unit's heading, not the unit: {sum(r['rare_in_section'] for r in placed)}; "
            f"in its definition term: {sum(r['rare_in_term'] for r in placed)}"
        )
    if args.save:
        Path(args.save).write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows_out), encoding="utf-8"
        )
    if args.cache:
        import pickle

        Path(args.cache).write_bytes(pickle.dumps(cache))


def why_refused(
    question: str, answers: list[str] | None, hits: list[Any], scored: Any, counts: Any, rendering: Any
) -> dict[str, Any]:
    """What decided a question's refusal (or answer) in `extractive.extractive_answer`: its route
    (a summary, a broad question no unit covers, or the evidence), the evidence of the reading the
    weights take (`weighed_evidence`: every signal of `EVIDENCE_SIGNALS`, the probability against
    `MIN_EVIDENCE`), which rule refused it (`refused_whatever`'s three, or the weights), the
    question's key words with their salience in the brain and whether the excerpts hold them, the
    missing words and names, the unknown-word gate's words, the kind of fact asked; then the best
    unit, and where the answer was (the best unit holding an expected answer: its rank, excerpt,
    kind and score; or in the excerpts but in no unit; or in none)."""
    import numpy as np

    from locallens import extractive as ex
    from locallens.evaluation.metrics import contains_answer
    from locallens.unit_scores import asks_name, key_words, word_salience

    out: dict[str, Any] = {"question": question}
    route = _route(question, hits, scored, counts)
    out["route"] = {"topic": "broad, no unit holds its topic", "nothing": "no unit"}.get(route, route)
    probability, found = ex.weighed_evidence(question, hits, scored, counts, rendering)
    full = max(
        ex.readings_evidence(question, hits, scored, counts, rendering, names=ex.EVIDENCE_SIGNALS),
        key=lambda r: ex.answer_evidence(r | {"unknown_word": 0.0}),
    )
    out["evidence"] = round(probability, 3)
    out["signals"] = {k: round(float(v), 3) for k, v in full.items()}
    if out["route"] == "evidence":
        if found["term_coverage"] < ex.MIN_TERM_COVERAGE:
            out["rule"] = "term coverage"
        elif found.get("fact_absent", 0.0) >= 1.0:
            out["rule"] = "fact absent"
        elif found.get("unknown_word", 0.0) >= 1.0:
            out["rule"] = "unknown word"
        elif probability < ex.MIN_EVIDENCE:
            # The signal that pulled the evidence down most (weight x value).
            pulls = {n: w * found[n] for n, w in ex.EVIDENCE_WEIGHTS.items() if w < 0}
            out["rule"] = f"weights ({min(pulls, key=lambda n: pulls[n])})"
        else:
            out["rule"] = "answered"
    words = key_words(question, refined=True)  # as the refusal reads them
    salience = word_salience(list(words.values()), counts)
    held = ex._held(hits)
    out["key_words"] = [f"{w}{'' if k in held else '*'} {salience[w]:.2f}" for k, w in words.items()]
    out["missing"] = ex.missing_words(question, hits)
    first = next(iter(ex._WORD.findall(question)), "")
    out["missing_names"] = [w for w in out["missing"] if ex._is_name(w, first)]
    out["unknown"] = ex.unknown_words(question, hits, counts, typos=False) if counts is not None else []
    out["fact"] = ex._refusal_fact(question) or ("name" if asks_name(question) else None)
    if rendering is not None:
        out["rendering"] = rendering.text
    if scored.units:
        order = [int(i) for i in np.argsort(-scored.scores, kind="stable")]
        best = scored.units[order[0]]
        out["best"] = f"{float(scored.scores[order[0]]):.3f} [{best.excerpt}] {best.kind}: {best.text[:120]}"
        positive = [
            i
            for i, u in enumerate(scored.units)
            if answers and contains_answer(" ".join(p.text for p in ex._passage(u, scored.units)), answers)
        ]
        if positive:
            i = max(positive, key=lambda k: float(scored.scores[k]))
            unit = scored.units[i]
            out["answer_at"] = (
                f"rank {_distinct_rank(scored, i)} [{unit.excerpt}] {unit.kind} {float(scored.scores[i]):.3f}: "
                f"{unit.text[:120]}"
            )
    if answers and "answer_at" not in out:
        in_text = contains_answer("\n".join(h.content for h in hits), answers)
        out["answer_at"] = "in the excerpts, in no unit" if in_text else "not in the 5 excerpts"
    return out


def topic_study(args: argparse.Namespace) -> None:
    """`--topic-study`: for every question `ask --extractive` answers by its evidence (those refused
    by the missing-topic gate counted as answered), each word of it no excerpt and no chunk of the
    brain holds: how far leaving it out moves the question (1 - cosine) and how much closer the
    question then is to the excerpts' best unit; then, per rule, the near misses and the
    answerable questions (stated or not) it would refuse (docs/decisions.md#a-topic-the-notes-never-mention)."""
    from locallens.evaluation.metrics import contains_answer
    from locallens.extractive import MIN_TOPIC_DROP, extractive_answer, topic_moves
    from locallens.models import WarmModels

    rules = {
        "moves >= 0.10": lambda drop, closer: drop >= 0.10,
        "moves >= 0.12": lambda drop, closer: drop >= 0.12,
        f"moves >= {MIN_TOPIC_DROP}": lambda drop, closer: drop >= MIN_TOPIC_DROP,
        f"moves >= {MIN_TOPIC_DROP}, closer (shipped)": lambda drop, closer: drop >= MIN_TOPIC_DROP and closer > 0,
    }
    refused: dict[str, dict[str, list[str]]] = {
        rule: {"near miss": [], "stated": [], "not stated": []} for rule in rules
    }
    counted = {"near miss": 0, "answerable": 0}
    models = WarmModels()
    for set_name, db, row in fit_questions(tuple(args.sets), Path(args.workdir)):
        q = row["question"]
        with question_context(row, set_name, db, models) as found:
            if found is None:
                continue
            checked = extractive_answer(
                q, found.hits, found.vector, found.encode, term_counts=found.counts, rendering=found.rendering
            )
            if checked.refused and not checked.topic:
                continue  # refused by the evidence itself: not at stake
            answerable = row.get("answerable", True)
            counted["answerable" if answerable else "near miss"] += 1
            kind = (
                "near miss"
                if not answerable
                else "stated"
                if contains_answer(checked.answer, row.get("answers") or [])
                else "not stated"
            )
            for word, drop, closer in topic_moves(q, found.hits, found.scored, found.counts, found.encode):
                if drop >= 0.10:
                    print(f"[{set_name}] {kind:<10} {word!r:<16} moves {drop:.3f}  closer {closer:+.3f}  {q}")
                for rule, fires in rules.items():
                    if fires(drop, closer) and f"{set_name}: {q}" not in refused[rule][kind]:
                        refused[rule][kind].append(f"{set_name}: {q}")
    models.close()
    print(
        f"\nanswered by the evidence: {counted['near miss']} near misses, {counted['answerable']} answerable questions"
    )
    print(f"{'a word no chunk holds, left out':<44}{'near misses':>12}{'stated':>8}{'not stated':>12}")
    for rule, found_ in refused.items():
        print(
            f"{rule:<44}"
            + "".join(f"{len(found_[k]):>{w}}" for k, w in (("near miss", 12), ("stated", 8), ("not stated", 12)))
        )


def refusals(args: argparse.Namespace) -> None:
    """`--refusals`: every answerable question `ask --extractive` refuses, and every near miss,
    explained by `why_refused` (one block per question; `--save F`: one JSON row each), then per
    set the rule that refused (or answered) them."""
    from locallens.extractive import extractive_answer
    from locallens.models import WarmModels

    models = WarmModels()
    rows_out: list[dict[str, Any]] = []
    tally: dict[str, dict[str, int]] = {}
    for set_name, db, row in fit_questions(tuple(args.sets), Path(args.workdir)):
        answerable = row.get("answerable", True)
        q = row["question"]
        with question_context(row, set_name, db, models) as found:
            if found is None:
                out = {"set": set_name, "question": q, "answerable": answerable, "refused": True, "route": "nothing"}
            else:
                checked = extractive_answer(
                    q, found.hits, found.vector, found.encode, term_counts=found.counts, rendering=found.rendering
                )
                if answerable and not checked.refused:
                    continue
                out = {"set": set_name, "answerable": answerable, "refused": checked.refused} | why_refused(
                    q, row.get("answers"), found.hits, found.scored, found.counts, found.rendering
                )
                if checked.topic:  # the evidence passed; the word the question is about refused it
                    out["rule"] = f"missing topic ({checked.topic})"
        rows_out.append(out)
        label = "false refusal" if answerable else "near miss refused" if out["refused"] else "near miss answered"
        tally.setdefault(f"{label}: {out.get('rule', out['route'])}", {}).setdefault(set_name, 0)
        tally[f"{label}: {out.get('rule', out['route'])}"][set_name] += 1
        print(f"\n[{set_name}] {label}: {q}")
        for key in (
            "route",
            "rule",
            "evidence",
            "signals",
            "key_words",
            "missing",
            "missing_names",
            "unknown",
            "fact",
            "rendering",
            "best",
            "answer_at",
        ):
            if out.get(key) not in (None, [], ""):
                print(f"  {key:<13} {out[key]}")
    models.close()
    sets = list(dict.fromkeys(r["set"] for r in rows_out))
    print(f"\n{'outcome: rule':<48}" + "".join(f"{n[:10]:>11}" for n in sets) + f"{'all':>6}")
    for cause, per in sorted(tally.items()):
        print(f"{cause:<48}" + "".join(f"{per.get(n, 0):>11}" for n in sets) + f"{sum(per.values()):>6}")
    if args.save:
        Path(args.save).write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows_out), encoding="utf-8"
        )


def replay_features(case: dict[str, Any]) -> list[Any]:
    """A cached question's feature rows computed again by the current `unit_scores` (its
    question's key terms and answer type read again, the cached salience and cosines kept)."""
    from dataclasses import replace

    from locallens.unit_scores import answer_type, features, key_terms

    return [
        features(
            replace(t, terms=key_terms(t.text), wants=answer_type(t.text)),
            case["units"],
            cos,
            case["paths"],
            case["retrieval"],
        )
        for t, cos in zip(case["terms"], case["cosines"])
    ]


def replay_scored(
    case: dict[str, Any],
    weights: dict[str, float] | None = None,
    bias: float | None = None,
    refeature: bool = False,
) -> Any:
    """A cached question's units scored again (`--cache`), with `weights` / `bias` or the shipped
    ones (`refeature`: on feature rows the current code computes again): the better of the
    question's and its rendering's scores, the units the scoring left out still 0."""
    import numpy as np

    from locallens.extractive import Scored
    from locallens.unit_scores import FEATURES, combine

    # Rows cached before a signal was added lack its column: the signal reads 0 there.
    width = len(FEATURES)
    rows = replay_features(case) if refeature else [np.pad(x, ((0, 0), (0, width - x.shape[1]))) for x in case["x"]]
    scores = np.max([combine(x, weights, bias) for x in rows], axis=0)
    scores[case["zeroed"]] = 0.0
    n = len(case["units"])
    return Scored(case["units"], scores, np.zeros(n), np.zeros((n, 1)))


def replay(args: argparse.Namespace, variants: dict[str, Any] | None = None) -> None:
    """Stated per set for the shipped passage and each variant, replayed offline from a
    `--diagnose --cache` pickle: a refused or summarised question keeps its live outcome (the
    refusal and the summary are not replayed); a passage is rebuilt from the cached units. The
    shipped row must equal the live run's."""
    import pickle
    import statistics as st

    from locallens.broad import is_broad
    from locallens.evaluation.metrics import contains_answer
    from locallens.extractive import _printed, passage_units

    cases = pickle.loads(Path(args.replay).read_bytes())

    def shipped(case: dict[str, Any]) -> list[Any]:
        return passage_units(replay_scored(case), other_excerpts=not is_broad(case["question"]))

    every = {"shipped": shipped, **(variants or {})}
    sets = list(dict.fromkeys(cs["set"] for cs in cases))
    print(f"{'variant':<28}" + "".join(f"{n[:9]:>10}" for n in sets) + f"{'all':>6}{'lost':>6}{'words':>7}")
    base: dict[int, bool] = {}
    for name, passage in every.items():
        per = dict.fromkeys(sets, 0)
        lost = 0
        lengths = []
        for k, case in enumerate(cases):
            if case["refused"] or case["summary"]:
                ok = contains_answer(case["answer"], case["answers"]) and not case["refused"]
            else:
                text = "\n".join(_printed(u) for u, _ in passage(case))
                ok = contains_answer(text, case["answers"])
                lengths.append(len(text.split()))
            if name == "shipped":
                base[k] = ok
                if ok != (not case["refused"] and contains_answer(case["answer"], case["answers"])):
                    print(f"  replay differs from the live run: {case['set']} {case['question']}")
            elif base[k] and not ok:
                lost += 1
                if args.verbose:
                    print(f"    {name} loses {case['set']}: {case['question']}")
            per[case["set"]] += ok
        print(
            f"{name:<28}" + "".join(f"{per[n]:>10}" for n in sets) + f"{sum(per.values()):>6}{lost:>6}"
            f"{st.median(lengths) if lengths else 0:>7.0f}"
        )


# The corpus each set's questions are asked of: a corpus is left out with all its sets.
CORPUS_OF = {name: corpus for name, (corpus, _) in SETS.items()}


def replay_stated(case: dict[str, Any], weights: dict[str, float] | None = None) -> bool:
    """Whether a cached question's printed answer states the expected one, its passage rebuilt by
    the current code with `weights` (a refused or summarised question keeps its live outcome)."""
    from locallens.broad import is_broad
    from locallens.evaluation.metrics import contains_answer
    from locallens.extractive import _printed, passage_units

    if case["refused"] or case["summary"]:
        return not case["refused"] and contains_answer(case["answer"], case["answers"])
    scored = replay_scored(case, weights, refeature=True)
    chosen = passage_units(scored, other_excerpts=not is_broad(case["question"]))
    return contains_answer("\n".join(_printed(u) for u, _ in chosen), case["answers"])


def weight_grid(args: argparse.Namespace) -> None:
    """One signal's weight chosen with each corpus left out (`--replay F --weight-grid
    NAME=W1,W2,...`): stated per corpus at every weight of the grid (the other weights as
    shipped), then per corpus the weight that states the most on the other corpora (ties: the
    smaller) and what it states on the one left out."""
    import pickle

    from locallens.unit_scores import WEIGHTS

    name, _, values = args.weight_grid.partition("=")
    grid = [float(v) for v in values.split(",")]
    cases = pickle.loads(Path(args.replay).read_bytes())
    corpora = list(dict.fromkeys(CORPUS_OF[case["set"]] for case in cases))
    table = {}
    for w in grid:
        weights = {**WEIGHTS, name: w}
        per = dict.fromkeys(corpora, 0)
        for case in cases:
            per[CORPUS_OF[case["set"]]] += replay_stated(case, weights)
        table[w] = per
        print(f"{name} {w:<6} " + " ".join(f"{k} {v}" for k, v in per.items()) + f"  all {sum(per.values())}")
    before = after = 0
    for left in corpora:
        chosen = max(grid, key=lambda w: (sum(v for k, v in table[w].items() if k != left), -w))
        print(f"  {left} left out: weight {chosen} states {table[chosen][left]} (at {grid[0]}: {table[grid[0]][left]})")
        before += table[grid[0]][left]
        after += table[chosen][left]
    print(f"each corpus left out: {before} -> {after}")


def rank_study(args: argparse.Namespace) -> None:
    """`--replay F.pkl --rank-study`: the units' ranking and the passage's rules, each corpus
    left out (`rank_study.study`, `rank_study.passage_grid`)."""
    import pickle

    import rank_study as rs

    cases = pickle.loads(Path(args.replay).read_bytes())
    rs.study(cases, CORPUS_OF)
    scored = [replay_scored(case) for case in cases]
    rs.first_positive_stated(cases, CORPUS_OF, scored)
    rs.passage_grid(cases, CORPUS_OF, scored)


def token_study(args: argparse.Namespace) -> None:
    """`--replay F.pkl --token-study`: signals that read the question and a unit token by token,
    each added to the shipped score, each corpus left out (`token_study.study`)."""
    import pickle

    import token_study as ts

    cases = pickle.loads(Path(args.replay).read_bytes())
    ts.study(cases, CORPUS_OF, replay_features, Path(args.states))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="sample,broad,es,es-given,pydoc,stdlib,borg")
    parser.add_argument("--modes", default="extractive,default", help=f"of {', '.join(MODES)}")
    parser.add_argument("--workdir", default=str(ROOT / ".bench-answers"), help="indexes and cached generations")
    parser.add_argument("--label", default="", help="a name for this run in the report (e.g. before / after)")
    parser.add_argument("--dump", default=None, help="write every printed unit as JSONL")
    parser.add_argument("--save", default=None, help="write every question's figures as JSONL")
    parser.add_argument("--fit", action="store_true", help="fit the unit scorer and the refusal threshold")
    parser.add_argument(
        "--refusal-only", action="store_true", help="with --fit: fit the refusal only, not the unit scorer"
    )
    parser.add_argument(
        "--transfer", action="store_true", help="the unit scorer fitted with each corpus left out, measured on it"
    )
    parser.add_argument(
        "--diagnose",
        action="store_true",
        help="where the answer was when the passage did not state it, and why it was left out",
    )
    parser.add_argument(
        "--refusals",
        action="store_true",
        help="why each answerable question refused, and each near miss, was decided so (the evidence, the rule)",
    )
    parser.add_argument(
        "--topic-study",
        action="store_true",
        help="the words no chunk holds of the questions answered: how far each moves the question (the missing-topic gate)",
    )
    parser.add_argument("--cache", default=None, help="with --diagnose: write every question's scored units (pickle)")
    parser.add_argument("--replay", default=None, help="replay the passage offline from a --cache pickle")
    parser.add_argument(
        "--weight-grid", default=None, help="with --replay: NAME=W1,W2,... one signal's weight, each corpus left out"
    )
    parser.add_argument(
        "--rank-study",
        action="store_true",
        help="with --replay: the units' ranking as learning to rank, each corpus left out",
    )
    parser.add_argument(
        "--token-study",
        action="store_true",
        help="with --replay: signals read from MiniLM's token states (MaxSim, ...), each corpus left out",
    )
    parser.add_argument(
        "--states", default="/tmp/units-token-states.pkl", help="with --token-study: the token states' cache"
    )
    parser.add_argument("--timing", type=int, default=0, help="time N sample questions cold and warm per mode")
    parser.add_argument(
        "--subset", type=int, default=0, help="ask only the first N answerable questions of a set (and all others)"
    )
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--max-tokens", type=int, default=None, help="answer length asked (default: ask's)")
    args = parser.parse_args()
    args.sets = args.sets.split(",")
    args.modes = args.modes.split(",")
    global MAX_TOKENS
    MAX_TOKENS = args.max_tokens
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("Answer benchmark", quick=False)
    if args.fit:
        fit(args)
    elif args.transfer:
        scorer_transfer(args)
    elif args.diagnose:
        diagnose(args)
    elif args.refusals:
        refusals(args)
    elif args.topic_study:
        topic_study(args)
    elif args.replay and args.rank_study:
        rank_study(args)
    elif args.replay and args.token_study:
        token_study(args)
    elif args.replay and args.weight_grid:
        weight_grid(args)
    elif args.replay:
        replay(args)
    elif args.timing:
        timing(args)
    else:
        report(run(args), args.label or "answers")
    c.print_end(started)


if __name__ == "__main__":
    main()
