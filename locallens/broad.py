"""Broad questions: "What is the leave policy?", "Summarize the on-call rotation.", "Tell me about
X", "What does the note on X say?", "Háblame de X". Such a question asks about a whole note or
section, not one fact: the answer stage summarises the document its topic names
(`extractive.summary_units`), and the search leaves a broad comparison ("Summarize the difference
between A and B") to be searched as any broad question (`retrieval.retrieve`).

`is_broad` reads the topic from the question's form alone; both stations ask it.
"""

from __future__ import annotations

import re

from locallens.unit_scores import key_terms, key_words

__all__ = ["GENERIC", "is_broad", "topic_words"]

_BROAD = re.compile(
    r"^\s*(?:"
    r"(?:please\s+)?(?:summari[sz]e|sum up|give (?:me )?(?:an? )?(?:overview|summary|rundown) of|"
    r"(?:an? )?(?:overview|summary) of|tell me (?:about|more about)|explain|describe)\s+(?P<a>.+?)"
    r"|what (?:is|are|'s) (?:in )?(?P<b>.+?)"
    r"|what does (?:the )?(?:note|doc|document|page|file|policy|section|guide|runbook)?\s*(?:on|about|for)?\s*(?P<c>.+?) say"
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
# Words that name the kind of text, not its topic.
_GENERIC_WORDS = (
    "note notes doc docs document page file section guide overview summary policy rules procedure process "
    "guidelines steps instructions nota documento normas reglas procedimiento proceso "
    # ... and the comparison a broad question asks for ("the difference between purging and
    # banning"): its topic is what is compared.
    "difference differences between compare comparison versus diferencia diferencias entre comparación"
)
GENERIC = frozenset(key for word in _GENERIC_WORDS.split() for key in key_terms(word))


def topic_words(topic: str) -> str:
    """A broad question's topic without the words that name the kind of text ("rules", "note")."""
    return " ".join(w for k, w in key_words(topic).items() if k not in GENERIC)


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
