"""Broad questions: "What is the leave policy?", "Summarize the on-call rotation.", "Tell me about
X", "What does the note on X say?", "What do the docs say about X?", "Háblame de X". Such a
question asks about a whole note or section, not one fact: the answer stage summarises the
document its topic names (`extractive.summary_units`), the search makes sure a file the topic
names by its file name is among the excerpts (`named_document`), and it leaves a broad
comparison ("Summarize the difference between A and B") to be searched as any broad question
(`retrieval.retrieve`).

`is_broad` reads the topic from the question's form alone; both stations ask it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from locallens.domain import document_of
from locallens.stemming import porter_stem
from locallens.unit_scores import key_terms, key_words

__all__ = ["GENERIC_WORDS", "is_broad", "named_document", "topic_terms", "topic_words"]

_BROAD = re.compile(
    r"^\s*(?:"
    r"(?:please\s+)?(?:summari[sz]e|sum up|give (?:me )?(?:an? )?(?:overview|summary|rundown) of|"
    r"(?:an? )?(?:overview|summary) of|tell me (?:about|more about)|explain|describe)\s+(?P<a>.+?)"
    r"|what (?:is|are|'s) (?:in )?(?P<b>.+?)"
    r"|what does (?:the )?(?:note|doc|document|page|file|policy|section|guide|runbook)?\s*(?:on|about|for)?\s*(?P<c>.+?) say"
    # "What does the borg documentation say about paperkey?", "What do the docs say on quotas?"
    r"|what (?:does|do) (?:the |my |our )?(?:[^?\s]+ ){0,3}?(?:documentation|docs?|manual|guide|handbook|wiki|"
    r"readme|faq|notes?|pages?|policy|runbook|documents?) say (?:about|on|regarding) (?P<g>.+?)"
    r"|(?:resume|resumen de|res[uú]meme|h[aá]blame (?:de|del|sobre)|cu[eé]ntame (?:de|sobre)|expl[ií]came)\s+(?P<d>.+?)"
    r"|qu[eé] (?:es|son) (?P<e>.+?)"
    r"|qu[eé] dice (?:la nota|el documento|la p[aá]gina|la gu[ií]a|la pol[ií]tica)?\s*(?:sobre|de|del)?\s*(?P<f>.+?)"
    r")\s*[?.!]*\s*$",
    re.I,
)
# "What is X" asks for one fact, not a summary, when X names a kind of fact.
_SPECIFIC = re.compile(
    r"\b(?:ports?|versions?|default|limits?|number|address|ip|dates?|time|size|price|cost|name|path|command|"
    r"url|password|value|deadline|puerto|versión|fecha|hora|precio|nombre|comando|valor)\b",
    re.I,
)
# Words that name the kind of text, not its topic, as written (singular and plural): compared as
# whole words, not by their key terms, whose five-letter stems would take "compact" for "compare",
# "processor" for "process" or "instrument" for "instructions".
_GENERIC_WORDS = (
    "note notes doc docs document documents documentation page pages file files section sections guide guides "
    "overview overviews summary summaries policy policies rules procedure procedures process processes "
    "guidelines steps instructions "
    "nota notas documento documentos documentación norma normas regla reglas procedimiento procedimientos "
    "proceso procesos guía guías página páginas sección secciones "
    # ... and the comparison a broad question asks for ("the difference between purging and
    # banning"): its topic is what is compared.
    "difference differences between compare comparison comparisons versus vs diferencia diferencias entre "
    "comparación comparar"
)
GENERIC_WORDS = frozenset(_GENERIC_WORDS.split())


def topic_words(topic: str) -> str:
    """A broad question's topic without the words that name the kind of text ("rules", "note")."""
    return " ".join(w for w in key_words(topic).values() if w.lower() not in GENERIC_WORDS)


def topic_terms(topic: str) -> frozenset[str]:
    """The key terms of a broad question's topic (`topic_words`)."""
    return key_terms(topic_words(topic))


def is_broad(question: str) -> str | None:
    """The topic of a broad question ("summarize the on-call rotation" -> "the on-call rotation"),
    or None for a specific one. "What is X" is broad only when X is short (at most four words)."""
    match = _BROAD.match(question.strip().lstrip("¿¡"))
    if match is None:
        return None
    topic = next(g for g in match.groups() if g is not None)
    if (match.group("b") or match.group("e")) and (len(topic.split()) > 4 or _SPECIFIC.search(topic)):
        return None  # "what is the default port?" asks for one fact
    return topic


_NAME_WORD = re.compile(r"[^\W_]+")


def _stems(text: str) -> set[str]:
    """The Porter stems of a text's words, a file name's split at its dots, dashes, underscores
    and slashes ("reference-vmod_cookie.txt": reference, vmod, cooki, txt)."""
    return {porter_stem(w) for w in _NAME_WORD.findall(text.lower())}


# A file is named by a topic's words only as far as they are rare in the brain: each word at
# least half as salient as the topic's most salient one must be in the file's name, and those it
# holds weigh at least MIN_NAMING_SALIENCE ("tig", which most of tig's chunks hold, names no file).
MIN_NAMING_SALIENCE = 0.2


def named_document(
    topic: str,
    paths: Sequence[str],
    salience: Callable[[Sequence[str]], dict[str, float]],
    ranked: Sequence[str] = (),
) -> str | None:
    """The file a broad question's topic names by its file name, or None. Each of the topic's words
    is weighed by its salience in the brain (`salience`: near 1 for a word few chunks hold, near 0
    for one most hold): a file's name (its path's words, by stem: "installing" is in
    installation.txt) must hold every word at least half as salient as the most salient one, so
    that a product's name every page holds ("borg" of "the borg quickstart") is not asked for and
    a word the name lacks ("benefits" of "the Madrid office benefits" against
    madrid-office-network.md) is; and the words it holds must weigh MIN_NAMING_SALIENCE. Of
    several such files the one holding the most weight; None when two hold the same, unless they
    are one document in two formats (git-stash.txt and git-stash.html): then the one first in
    `ranked` (the search's order), else the first by name
    (docs/decisions.md#the-file-a-broad-question-names)."""
    words = list(dict.fromkeys(w for w in _NAME_WORD.findall(topic_words(topic).lower()) if len(w) > 1))
    if not words or not paths:
        return None
    found = salience(words)
    weight = {w: found.get(w, 1.0) for w in words}
    top = max(weight.values())
    stems = {w: porter_stem(w) for w in words}
    required = {stems[w] for w in words if weight[w] >= top / 2}
    # A stem keeps its word's first letters (Porter's rules change endings): a path without them
    # is passed over unstemmed, which keeps a brain of many files fast.
    starts = [stem[:4] for stem in required]
    candidates = [path for path in paths if all(start in path.lower() for start in starts)]
    held = {
        path: sum(weight[w] for w in words if stems[w] in name)
        for path in candidates
        if required <= (name := _stems(path))
    }
    if not held:
        return None
    most = max(held.values())
    best = sorted(path for path, score in held.items() if score >= most - 1e-9)
    if most < MIN_NAMING_SALIENCE or len({document_of(path) for path in best}) > 1:
        return None
    return next((path for path in ranked if path in best), best[0])
