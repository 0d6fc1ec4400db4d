"""A Spanish question over English notes: searched in English too (`locallens.crosslang`)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from locallens import crosslang
from locallens.domain import Rendering
from locallens.errors import UsageError
from locallens.retrieval import hybrid_search, retrieve, search
from locallens.storage.sqlite import Store

from .helpers import FakeEmbedder, write_one_chunk_notes

DIM = 4
NOTES = {
    "staging.md": "The staging database listens on port 5433.",
    "vpn-es.md": "La VPN corporativa escucha en el puerto 51820.",
    "printer.md": "The printer is on the second floor.",
}
# The Spanish question's vector is nearest the Spanish note; its English rendering's nearest the
# English one (as the English-only embedder places them).
VECTORS = {"staging.md": [0, 1, 0, 0], "vpn-es.md": [1, 0, 0, 0], "printer.md": [0, 0, 0, 1]}
QUESTION = "¿En qué puerto escucha la base de datos de staging?"
SPANISH = np.array([0.95, 0.31, 0, 0], dtype=np.float32) / np.float32(np.hypot(0.95, 0.31))
ENGLISH = np.array([0.2, 0.98, 0, 0], dtype=np.float32) / np.float32(np.hypot(0.2, 0.98))


@pytest.fixture()
def notes(tmp_path: Path):  # type: ignore[no-untyped-def]
    with Store(tmp_path / "index.db") as store:
        brain = store.create_brain("default", "synthetic", DIM, "paragraph", 220, 0)
        write_one_chunk_notes(store, brain, NOTES, VECTORS)
        yield store, brain


@pytest.mark.parametrize("hybrid", [False, True])
def test_the_english_rendering_brings_the_english_note_first_with_its_better_cosine(notes, hybrid) -> None:  # type: ignore[no-untyped-def]
    store, brain = notes
    alone = search(store, brain, QUESTION, SPANISH, 1, hybrid=hybrid)
    assert [h.chunk.relative_path for h in alone] == ["vpn-es.md"]
    rendered = [("In which port does the staging database listen?", ENGLISH)]
    both = search(store, brain, QUESTION, SPANISH, 3, hybrid=hybrid, also=rendered)
    assert both[0].chunk.relative_path == "staging.md"
    # each chunk keeps its best cosine over the two renderings
    cosine = {h.chunk.relative_path: h.score for h in both}
    assert cosine["staging.md"] == pytest.approx(float(ENGLISH @ [0, 1, 0, 0]), abs=1e-5)
    assert cosine["vpn-es.md"] == pytest.approx(float(SPANISH @ [1, 0, 0, 0]), abs=1e-5)


def test_each_rendering_is_searched_by_its_own_keywords(notes) -> None:  # type: ignore[no-untyped-def]
    store, brain = notes
    # Vectors that favour no note: only the keywords decide, and only the rendering's match.
    flat = np.array([0.5, 0.5, 0.5, 0.5], dtype=np.float32)
    assert store.keyword_scores(brain, "¿Dónde hay impresoras?", 5) == []
    hits = hybrid_search(store, brain, "¿Dónde hay impresoras?", flat, 1, also=[("Where is the printer?", flat)])
    assert hits[0].chunk.relative_path == "printer.md"


def test_a_rendering_ranks_by_how_far_ahead_its_best_chunk_is(notes) -> None:  # type: ignore[no-untyped-def]
    """With the English-only embedder a Spanish question is about as close to every Spanish
    note: its raw cosines are high but say little. Each rendering is standardised on its own, so
    the English rendering's clear winner ranks first though its cosine is lower."""
    store, brain = notes
    spanish = np.array([0.7, 0.0, 0.3, 0.6], dtype=np.float32)  # vpn-es 0.72, printer 0.62, staging 0
    spanish /= np.linalg.norm(spanish)
    english = np.array([0.0, 0.6, 0.6, 0.45], dtype=np.float32)  # staging 0.62, printer 0.47, vpn-es 0
    english /= np.linalg.norm(english)
    hits = search(store, brain, "¿Qué?", spanish, 3, hybrid=False, also=[("What?", english)])
    assert hits[0].chunk.relative_path == "staging.md"
    assert hits[0].score < max(h.score for h in hits)


def test_the_questions_own_scores_give_way_to_the_renderings_when_both_are_searched(  # type: ignore[no-untyped-def]
    notes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The question's best chunk stands a little further ahead of its others than the English
    rendering's does: the rendering's still goes first (the question's own scores lowered by
    `QUESTION_SHIFT`); alone, the question is searched exactly as before."""
    from locallens import retrieval

    shipped = retrieval.QUESTION_SHIFT
    store, brain = notes
    spanish = np.array([0.8, 0.0, 0.3, 0.6], dtype=np.float32)  # vpn-es first
    spanish /= np.linalg.norm(spanish)
    english = np.array([0.0, 0.7, 0.3, 0.6], dtype=np.float32)  # staging first
    english /= np.linalg.norm(english)

    def first(shift: float, also: list[tuple[str, np.ndarray]]) -> str:
        monkeypatch.setattr(retrieval, "QUESTION_SHIFT", shift)
        return hybrid_search(store, brain, "¿Qué?", spanish, 1, also=also)[0].chunk.relative_path

    assert first(0.0, [("What?", english)]) == "vpn-es.md"
    assert first(shipped, [("What?", english)]) == "staging.md"
    assert first(shipped, []) == first(0.0, []) == "vpn-es.md"


def test_only_spanish_questions_are_translated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCALLENS_TRANSLATE", raising=False)
    assert crosslang.wants_rendering(QUESTION)
    assert not crosslang.wants_rendering("Which port does the staging database listen on?")
    assert crosslang.render("Which port does the staging database listen on?") is None
    monkeypatch.setenv("LOCALLENS_TRANSLATE", "0")
    assert not crosslang.wants_rendering(QUESTION)
    assert crosslang.render(QUESTION) is None
    monkeypatch.setenv("LOCALLENS_TRANSLATE", "perhaps")
    with pytest.raises(UsageError, match="LOCALLENS_TRANSLATE"):
        crosslang.wants_rendering(QUESTION)


def test_an_english_question_in_a_users_words_is_read_in_documentations_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCALLENS_TRANSLATE", raising=False)
    wording = crosslang.documentation_wording
    assert wording("How do I match files in every Folder below the current folder?") == (
        "How do I match files in every Directory below the current directory?"
    )
    assert wording("Which shortcut runs it? Are wildcards expanded in subfolders?") == (
        "Which key binding runs it? Are globs expanded in subdirectories?"
    )
    # Whole words only; a path, a file name or a compound is the user's own.
    assert wording("Is /srv/folder/ or my-folder or folder.txt or folders2 read?") is None
    assert crosslang.render("Where is the folder of backups?") == Rendering(
        "Where is the directory of backups?", "wording"
    )
    monkeypatch.setenv("LOCALLENS_TRANSLATE", "0")
    assert crosslang.render("Where is the folder of backups?") is None


def test_a_spanish_questions_english_rendering_is_in_documentations_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCALLENS_TRANSLATE", raising=False)
    monkeypatch.setattr(crosslang, "_apertium", lambda: None)
    monkeypatch.setattr(crosslang, "gloss", lambda question: "folder subfolders")
    assert crosslang.render("¿Qué carpeta y qué subcarpetas?") == Rendering("directory subdirectories", "gloss")


def test_retrieve_searches_a_users_word_as_documentation_writes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end with the bag-of-words embedder: "folder" meets no note, "directory" does."""
    monkeypatch.delenv("LOCALLENS_TRANSLATE", raising=False)
    embedder = FakeEmbedder()
    notes = {
        "shell/dirs.md": "The shell searches the current directory first.",
        "shell/history.md": "The shell saves the history when it exits.",
    }
    with Store(tmp_path / "index.db") as store:
        brain = store.create_brain("default", embedder.name, embedder.dim, "paragraph", 220, 0)
        write_one_chunk_notes(store, brain, notes, {p: embedder.vector(t) for p, t in notes.items()})
        result = retrieve(store, brain, embedder, "Which folder gets searched first?", 1)
        assert result.rendering == Rendering("Which directory gets searched first?", "wording")
        assert [h.chunk.relative_path for h in result.hits] == ["shell/dirs.md"]


def test_without_apertium_the_question_is_glossed_word_by_word(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCALLENS_TRANSLATE", raising=False)
    monkeypatch.setattr(crosslang, "_apertium", lambda: None)
    rendering = crosslang.render("¿Con qué comando hago rollback de dispatch-api en el puerto 8080?")
    # bridged words in English, identifiers and numbers kept, other Spanish words left out
    assert rendering == Rendering("command dispatch-api port 8080", "gloss")
    assert crosslang.gloss("¿y eso?") == ""


def test_a_failing_translator_falls_back_to_the_gloss(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("LOCALLENS_TRANSLATE", raising=False)
    broken = tmp_path / "apertium"
    broken.write_text("#!/bin/sh\necho 'no such mode' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setattr(crosslang, "_apertium", lambda: str(broken))
    assert crosslang.render(QUESTION) == Rendering("port database data", "gloss")
    missing = tmp_path / "gone"
    monkeypatch.setattr(crosslang, "_apertium", lambda: str(missing))
    assert crosslang.render(QUESTION) == Rendering("port database data", "gloss")


@pytest.mark.skipif(crosslang._apertium() is None, reason="Apertium's Spanish-English pair is not installed")
def test_apertium_renders_the_question_in_english(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCALLENS_TRANSLATE", raising=False)
    rendering = crosslang.render(QUESTION)
    assert rendering is not None and rendering.via == "apertium"
    words = re.findall(r"[\w-]+", rendering.text.lower())
    assert "port" in words and "database" in words and "staging" in words


@pytest.mark.skipif(crosslang._apertium() is None, reason="Apertium's Spanish-English pair is not installed")
def test_a_command_named_by_a_spanish_word_keeps_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "modo vi" was rendered "way saw", "con sed" "with are", "echo -n" "throw -n": a command
    whose name is a Spanish word passes through the translation as written; a bracket of the
    question's own stays the question's."""
    monkeypatch.delenv("LOCALLENS_TRANSLATE", raising=False)
    for question, command in (
        ("¿Cómo pongo el editor de línea en modo vi en vez de emacs?", "vi"),
        ("¿Cómo reemplazo texto con sed en todos los ficheros?", "sed"),
        ("¿Qué hace echo -n?", "echo"),
    ):
        rendering = crosslang.render(question)
        assert rendering is not None and rendering.via == "apertium"
        words = re.findall(r"[\w-]+", rendering.text)
        assert command in words and "saw" not in words and "throw" not in words, rendering.text
        assert "[" not in rendering.text
    rendering = crosslang.render("¿Qué significa [vi] en la ayuda?")
    assert rendering is not None and "[vi]" in rendering.text


def test_retrieve_searches_a_spanish_question_in_english_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end with the bag-of-words embedder: the Spanish question shares words with the
    Spanish note only; its rendering shares `port` and `database` with the English one."""
    monkeypatch.delenv("LOCALLENS_TRANSLATE", raising=False)
    embedder = FakeEmbedder()
    notes = {
        "engineering/test.md": "The database listens on port 5433.",
        "notas/almacen.md": "La base del almacén escucha los pedidos.",
        "hr/leave.md": "Employees get 25 working days of paid leave.",
    }
    with Store(tmp_path / "index.db") as store:
        brain = store.create_brain("default", embedder.name, embedder.dim, "paragraph", 220, 0)
        write_one_chunk_notes(store, brain, notes, {p: embedder.vector(t) for p, t in notes.items()})
        monkeypatch.setattr(crosslang, "_apertium", lambda: None)
        result = retrieve(store, brain, embedder, QUESTION, 1)
        assert result.rendering == Rendering("port database data", "gloss")
        assert [h.chunk.relative_path for h in result.hits] == ["engineering/test.md"]
        monkeypatch.setenv("LOCALLENS_TRANSLATE", "0")
        result = retrieve(store, brain, embedder, QUESTION, 1)
        assert result.rendering is None
        assert [h.chunk.relative_path for h in result.hits] == ["notas/almacen.md"]


def test_the_extractive_answer_reads_the_english_rendering_too() -> None:
    """A unit that shares no word with the Spanish question but answers its English rendering
    is printed (the bag-of-words encoder of test_claims stands in for the embedder)."""
    from locallens.extractive import extractive_answer

    from .test_answer_units import LEAVE, RUNBOOK
    from .test_claims import fake_encode, fake_vector, hit

    def ask(question: str, english: str, note: str):  # type: ignore[no-untyped-def]
        hits = [hit(note, "notes/policy.md", 0)]
        plain = extractive_answer(question, hits, fake_vector(question), fake_encode)
        rendering = Rendering(english, "apertium", fake_vector(english))
        return plain, extractive_answer(question, hits, fake_vector(question), fake_encode, rendering=rendering)

    # The question alone may be answered too (its numbers and bridged words are read across
    # languages); with the rendering the answering unit is the one that states it.
    _, read = ask(
        "¿Cuántos días libres se pueden pasar al año siguiente?",
        "How many free days can be carried over to the next year?",
        LEAVE,
    )
    assert not read.refused and "5 unused days can be carried over" in read.answer
    plain, read = ask(
        "¿Hace falta aprobación para volver atrás un servicio?", "Does rolling back need approval?", RUNBOOK
    )
    assert "never needs approval" not in plain.answer
    answering = [c.claim for c in read.claims if c.answering]
    assert answering[0] == "Rolling back is always allowed and never needs approval."


def test_ask_json_shows_the_rendering_of_a_spanish_question(fake_models, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from locallens.answer import AskRequest, ask
    from locallens.indexer import IndexRequest, index

    from .helpers import write_files

    monkeypatch.delenv("LOCALLENS_TRANSLATE", raising=False)
    monkeypatch.setattr(crosslang, "_apertium", lambda: None)
    root = write_files(tmp_path / "notes", {"staging.md": "# Staging\n\nThe staging database listens on port 5433.\n"})
    db = tmp_path / "index.db"
    index(IndexRequest(paths=[root], db=db))
    spanish = ask(AskRequest(question=QUESTION, db=db, extractive=True)).as_json()
    assert spanish["rendering"] == {"text": "port database data", "via": "gloss"}
    assert "5433" in spanish["answer"]
    english = ask(AskRequest(question="Which port does the staging database listen on?", db=db, extractive=True))
    assert "rendering" not in english.as_json()


def test_eval_searches_and_answers_a_spanish_question_as_ask_does(fake_models, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`eval` measures what `ask` prints: its Spanish question is searched in English too, and
    its answer reads the rendering."""
    from locallens.evaluation.run import EvalRequest, run_eval
    from locallens.indexer import IndexRequest, index

    from .helpers import write_files

    monkeypatch.delenv("LOCALLENS_TRANSLATE", raising=False)
    monkeypatch.setattr(crosslang, "_apertium", lambda: None)
    root = write_files(
        tmp_path / "notes",
        {
            "staging.md": "# Staging\n\nThe staging database listens on port 5433.\n",
            "almacen.md": "# Almacén\n\nLa base del almacén escucha los pedidos.\n",
        },
    )
    db = tmp_path / "index.db"
    index(IndexRequest(paths=[root], db=db))
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        '{"question": "' + QUESTION + '", "answers": ["5433"], "files": ["staging.md"]}\n', encoding="utf-8"
    )
    report = run_eval(
        EvalRequest(
            db=db, questions=questions, answers=True, extractive=True, top_k=1, thresholds=(0.38,), windows=(0,)
        )
    )
    assert report.as_json()["retrieval"]["hit_at_k"] == 1.0
    answers = report.answers
    assert answers is not None and answers.fact_accuracy == 1.0
    assert "5433" in (answers.per_question[0].answer or "")


# A stand-in for Apertium's null-flush pipeline: each text up to a null character comes back
# upper-cased, ended by a null character (as `lt-proc -z` ends its output).
_ECHO = r"""
import sys
buf = b""
while True:
    ch = sys.stdin.buffer.read(1)
    if not ch:
        break
    if ch == b"\0":
        sys.stdout.buffer.write(buf.decode("utf-8").upper().encode("utf-8") + b"\0")
        sys.stdout.buffer.flush()
        buf = b""
    else:
        buf += ch
"""


def test_the_translator_keeps_one_process_for_every_question() -> None:
    import sys

    translator = crosslang.Translator([sys.executable, "-c", _ECHO])
    try:
        assert translator.translate("¿En qué  puerto?") == "¿EN QUÉ PUERTO?"
        first = translator._process
        # Apertium's stream characters are escaped on the way in and unescaped on the way out.
        assert translator.translate("get(key[, default]) a/b") == "GET(KEY[, DEFAULT]) A/B"
        assert translator._process is first
        # a null character inside the text does not split it into two answers
        assert translator.translate("uno\0dos") == "UNO DOS"
        assert translator.translate("tres") == "TRES"
    finally:
        translator.close()
    assert translator._process is None


def test_a_silent_translator_times_out_and_is_stopped() -> None:
    import sys

    translator = crosslang.Translator([sys.executable, "-c", "import time; time.sleep(30)"])
    assert translator.translate("¿Qué?", timeout=0.3) is None
    assert translator._process is None


def test_the_pipeline_is_the_mode_file_with_null_flush_on_every_stage(tmp_path: Path) -> None:
    mode = tmp_path / "spa-eng.mode"
    mode.write_text(
        "lt-proc '/d/spa-eng.automorf.bin' | apertium-tagger -g $2 '/d/spa-eng.prob' | apertium-pretransfer"
        " | lt-proc -b '/d/spa-eng.autobil.bin' | lrx-proc -m '/d/x.bin' | lt-proc $1 '/d/spa-eng.autogen.bin'\n"
    )
    whole = crosslang.null_flush_pipeline(mode)
    assert whole is not None and whole[:2] == ["bash", "-c"]
    assert whole[2].split(" | ") == [
        "lt-proc -z /d/spa-eng.automorf.bin",
        "apertium-tagger -z -g /d/spa-eng.prob",
        "apertium-pretransfer -z",
        "lt-proc -z -b /d/spa-eng.autobil.bin",
        "lrx-proc -z -m /d/x.bin",
        "lt-proc -z -n /d/spa-eng.autogen.bin",
    ]
    assert crosslang.null_flush_pipeline(tmp_path / "missing.mode") is None


def test_documentation_words_are_put_in_english_before_translation() -> None:
    assert (
        crosslang.with_doc_terms("¿Qué Comando del depurador pone un punto de interrupción por defecto en la pila?")
        == "¿Qué command del depurador pone un breakpoint default en la stack?"
    )
    # whole words only: "colar" and "cola-de-trabajo" are not "cola"
    assert crosslang.with_doc_terms("colar la cola-de-trabajo") == "colar la cola-de-trabajo"
    assert crosslang.with_doc_terms("¿Qué excepción se lanza?") == "¿Qué excepción is raised?"
    # general documentation words, the longest phrase first: "tiempo de espera" is one word
    assert (
        crosslang.with_doc_terms("¿Qué tiempo de espera tiene la Caché para las cabeceras en el sistema de archivos?")
        == "¿Qué timeout tiene la cache para las headers en el file system?"
    )
    # a first-person verb after "cómo" keeps its subject, for the English's "do I"
    assert (
        crosslang.with_doc_terms("¿Cómo reanudo la copia en segundo plano?")
        == "¿Cómo yo resume la copia in the background?"
    )
    assert crosslang.with_doc_terms("¿Cómo lo desactivo?") == "¿Cómo yo lo disable?"
    assert crosslang.with_doc_terms("¿Cómo funciona el registro?") == "¿Cómo funciona el log?"
    # the Spanish order of a noun and its "por defecto" is English's ("a value default" before)
    assert (
        crosslang.with_doc_terms("un valor por defecto en la hoja de cálculo") == "un default value en la spreadsheet"
    )
    # backups, storage and keys: a passphrase, not a "sentence of password"; what is kept
    assert (
        crosslang.with_doc_terms("¿Se conservan los metadatos si cambio la frase de contraseña?")
        == "¿get kept los metadata si cambio la passphrase?"
    )
    # a shell's jobs, a program's features, and "cada orden" a command as "la orden" is
    assert (
        crosslang.with_doc_terms("¿Qué opción avisa de que un trabajo en segundo plano ha terminado?")
        == "¿Qué opción avisa de que un job in the background ha terminado?"
    )
    assert crosslang.with_doc_terms("la lista de características") == "la lista de features"
    assert crosslang.with_doc_terms("que cada orden se escriba") == "que cada command se escriba"


def test_identifiers_the_translation_lost_are_added_back() -> None:
    question = "¿Qué vale con la opción -O o --force en main.cf para SEV1 en Stripe? ¿Cómo?"
    rendered = "What is worth with the option -Or or --force in main.cf for SEV1 in Stripe? How?"
    # `-O` was lost; `--force`, `main.cf`, `SEV1` were kept; a capitalised word is no identifier
    assert crosslang.keep_identifiers(question, rendered) == rendered + " -O"


def test_a_rendering_is_the_translators_english_of_the_documentation_words_put_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.delenv("LOCALLENS_TRANSLATE", raising=False)
    translator = crosslang.Translator([sys.executable, "-c", _ECHO])
    monkeypatch.setattr(crosslang, "_apertium", lambda: "apertium")
    monkeypatch.setattr(crosslang, "_translator", lambda: translator)
    try:
        rendering = crosslang.render("¿Qué comando muestra la cola de correo con -v?")
    finally:
        translator.close()
    # the stand-in upper-cases: `-V` is not `-v`, so the flag is added back as asked
    assert rendering == Rendering("¿QUÉ COMMAND MUESTRA LA QUEUE DE MAIL CON -V? -v", "apertium")


def test_a_question_opener_is_put_in_english_and_the_rest_translated_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCALLENS_TRANSLATE", raising=False)
    monkeypatch.setattr(crosslang, "_apertium", lambda: "apertium")
    sent: list[str] = []

    def translate(command: str, text: str) -> str:  # a stand-in: "Y" becomes "And", the rest kept
        sent.append(text)
        return "And " + text[2:] if text.startswith("Y ") else text

    monkeypatch.setattr(crosslang, "_translate", translate)
    rendering = crosslang.render("¿Cómo consigo que Postfix escriba su registro con -v?")
    assert rendering == Rendering("How do I make Postfix escriba su log con -v?", "apertium")
    assert sent == ["Y Postfix escriba su log con -v?"]  # the documentation words first, as always
    assert crosslang.render("¿Cada cuánto se refresca la copia?") == Rendering(
        "How often se refresca la copia?", "apertium"
    )
    # an opener alone, or not opening the question, is translated with the rest
    assert crosslang.question_form("¿Cada cuánto?") is None
    assert crosslang.question_form("Quiero saber qué pasa si borro el fichero") is None
    assert crosslang.render("¿Qué pasa?").text == "¿Qué pasa?"


def test_a_rendering_gets_englishs_do_support() -> None:
    assert crosslang.with_do_support("How I change the port?") == "How do I change the port?"
    assert crosslang.with_do_support("Where I put the file?") == "Where do I put the file?"
    for kept in ("How I am told?", "How can I change it?", "How do I change it?", "What I have?"):
        assert crosslang.with_do_support(kept) == kept


def test_shell_words_and_spanish_constructions_are_put_as_apertium_should_read_them() -> None:
    w = crosslang.with_doc_terms
    # shell and terminal words Apertium renders in another sense ("historial" -> "record")
    assert w("¿Dónde se guarda el historial?") == "¿Dónde se guarda el history?"
    assert w("la salida de las órdenes ocultas") == "la output de las commands hidden"
    # "hacer que" is "make", "permitir que" is "let", a negation's "nada" is "anything"
    assert w("¿Qué opción hace que la shell salga?") == "¿Qué opción makes la shell salga?"
    assert w("La opción permite que el prompt cambie") == "La opción lets el prompt cambie"
    assert w("sirve para no hacer nada") == "sirve para no hacer anything"
    assert w("¿Cómo entro en una carpeta?") == "¿Cómo I go into una carpeta?"
    # a Spanish synonym Apertium renders right
    assert w("en lugar de dar un error") == "en vez de dar un error"
    assert w("¿Qué opción evita que se guarde?") == "¿Qué opción impide que se guarde?"
    # "modo" is "mode", its phrases keep their sense
    assert w("el modo vi, de modo que funcione") == "el mode vi, de forma que funcione"
    # "orden" is a command when feminine or an instrument, a sequence when masculine
    assert w("Ejecuta la orden en orden alfabético") == "Ejecuta la command en orden alfabético"
    assert w("¿Con qué orden veo los ficheros?") == "¿Con qué command veo los ficheros?"
    # an infinitive's joined object pronoun: "teclearla" is "type it", "cargarlos" "loads them"
    assert w("nada más teclearla o cargarlos") == "nada más type it o loads them"
    # whole words: "evitarlo" and "salidas" are not "evitar" and "salida" cut short
    assert w("evitarlo") == "evitarlo"
    assert w("las salidas") == "las outputs"


def test_cuanto_with_a_verb_of_time_opens_a_how_long_question() -> None:
    assert crosslang.question_form("¿Cuánto tarda el servidor en arrancar?") == (
        "How long takes",
        "el servidor en arrancar?",
    )
    assert crosslang.question_form("¿Cuánto tiempo espera la shell?") == ("How long waits", "la shell?")
    assert crosslang.question_form("¿Cuánto cuesta?") is None


@pytest.mark.skipif(crosslang._apertium() is None, reason="Apertium's Spanish-English pair is not installed")
def test_a_first_person_documentation_verb_after_como_keeps_do_support(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALLENS_TRANSLATE", "1")
    rendering = crosslang.render("¿Cómo navego por los ficheros de un archivo?")
    assert rendering is not None and rendering.text.startswith("How do I browse")
    rendering = crosslang.render("¿Cómo desactivo el historial?")
    assert rendering is not None and rendering.text == "How do I disable the history?"


@pytest.mark.skipif(crosslang._apertium() is None, reason="Apertium's Spanish-English pair is not installed")
def test_every_english_word_put_before_translation_comes_out_of_apertium_as_it_went_in() -> None:
    # An English word that is also a Spanish word form is translated again ("load" is the
    # imperative of "loar", rendered "praise"; "replica" -> "retorts"): every English value of
    # DOC_TERMS and CONSTRUCTIONS must come out (its first six letters, hyphens aside).
    command = crosslang._apertium()
    assert command is not None

    def words(text: str) -> list[str]:
        return [word[:6] for word in re.findall(r"[a-z]+", text.lower().replace("-", ""))]

    english = set(crosslang.DOC_TERMS.values()) | {
        r for _, r in crosslang.CONSTRUCTIONS if re.fullmatch(r"[A-Za-z ]+", r)
    }
    lost = {}
    for value in sorted(english):
        out = crosslang._translate(command, f"Aquí está {value}.") or ""
        if not all(word in words(out) for word in words(value)):
            lost[value] = out
    assert lost == {}


def test_a_verb_after_que_and_its_noun_is_put_in_a_relative_clause() -> None:
    # Apertium's analysis as `_analysis` gives it: each word with its readings
    analysed = [
        ("¿", ["¿<lquest>"]),
        ("Qué", ["Qué<prn><itg><m><sg>", "Qué<det><itg><mf><sp>"]),
        ("función", ["función<n><f><sg>"]),
        ("de", ["de<pr>"]),
        ("VCL", ["*VCL"]),
        ("pasa", ["pasa<n><f><sg>", "pasar<vblex><pri><p3><sg>"]),
        ("la", ["el<det><def><f><sg>"]),
        ("cabecera", ["*cabecera"]),
        ("?", ["?<sent>"]),
    ]
    question = "¿Qué función de VCL pasa la cabecera?"
    assert crosslang.relative_form(question, analysed) == "¿Cuál es la función de VCL que pasa la cabecera?"
    plural = [
        ("¿", ["¿<lquest>"]),
        ("Qué", ["Qué<prn><itg><m><sg>"]),
        ("puertos", ["puerto<n><m><pl>"]),
        ("usan", ["usar<vblex><pri><p3><pl>"]),
    ]
    assert crosslang.relative_form("¿Qué puertos usan?", plural) == "¿Cuáles son los puertos que usan?"
    # no noun after "qué", a determiner before any verb, "ser": left as it is
    no_noun = [("¿", ["¿<lquest>"]), ("Qué", ["Qué<prn><itg><m><sg>"]), ("es", ["ser<vbser><pri><p3><sg>"])]
    assert crosslang.relative_form("¿Qué es?", no_noun) is None
    determiner = [*analysed[:3], ("la", ["el<det><def><f><sg>"]), ("lista", ["lista<n><f><sg>"]), analysed[5]]
    assert crosslang.relative_form("¿Qué función la lista pasa?", determiner) is None
    is_ = [analysed[0], analysed[1], analysed[2], ("es", ["ser<vbser><pri><p3><sg>"])]
    assert crosslang.relative_form("¿Qué función es?", is_) is None
    assert crosslang.relative_form("¿Dónde está?", [("¿", []), ("Dónde", ["dónde<adv><itg>"])]) is None


@pytest.mark.skipif(crosslang._apertium() is None, reason="Apertium's Spanish-English pair is not installed")
def test_apertium_reads_the_verb_after_que_and_its_noun_as_a_verb() -> None:
    rendered = crosslang._apertium_rendering("¿Qué opción activa el soporte de HTTP/2?")
    assert rendered is not None and "active option" not in rendered and "option that" in rendered


_WORDS = st.sampled_from(["¿", "Qué", "qué", "opción", "de", "VCL", "activa", "la", "es", "?", "a(", "[x]", ""])
_READINGS = st.lists(
    st.sampled_from(
        ["x<n><f><sg>", "x<n><m><pl>", "x<vblex><pri><p3><sg>", "ser<vbser><pri><p3><sg>", "x<adj>", "x<pr>", "*x"]
    ),
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_WORDS, _READINGS), max_size=8), st.text(max_size=60))
def test_the_relative_form_and_the_documentation_words_take_any_text(analysed, text) -> None:  # type: ignore[no-untyped-def]
    question = " ".join(surface for surface, _ in analysed) + text
    relative = crosslang.relative_form(question, analysed)
    # a relative form keeps every word of the question after the opener, and adds "que"
    assert relative is None or (" que " in relative and relative.startswith(question[: question.lower().find("qu")]))
    assert isinstance(crosslang.with_doc_terms(question), str)
