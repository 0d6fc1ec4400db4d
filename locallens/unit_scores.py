"""How well each answer unit answers the question: several signals, combined by fitted weights.

The signals of one unit (`FEATURES`, each in 0..1):
- `cosine`: the embedder's cosine similarity between the question and the unit;
- `context_cosine`: the best cosine of what introduces the unit (its setup line, a table's
  header row, a definition's term), so that a command under "To roll back, run:" scores as its
  setup does;
- `terms`: the share of the question's key terms (stems of content words, identifiers, numbers;
  `key_terms`) that the unit holds;
- `context_terms`: the same share over the unit's context (setup, header row, term, section
  heading, the excerpt's file name);
- `type_match` / `type_miss`: the question asks for a kind of answer (a number or a duration, a
  command or code, a name, a path; `answer_type`) and the unit has one, or lacks one;
- `novelty`: the share of the unit's key terms that are not the question's: a unit that only
  restates the question's topic says nothing new;
- `rank`: 1 / the excerpt's retrieval rank;
- `short`: the unit has fewer than four key terms (a "Then:" or a lone heading-like line);
- `salient_terms`: the share of the question's key terms the unit holds, each weighed by how rare
  its word is among the brain's chunks (its inverse document frequency, as the refusal's missing
  word is weighed): "traceback" in "which exception ends the program without printing a
  traceback?" counts for more than "program";
- `new_identifier`: the question asks for code (a method, an option, an exception) and the unit or
  its term holds an identifier the question does not: the answer to "which method runs when the
  with block is left?" names a method;
- `retrieval_share`: the excerpt's retrieval score over the top excerpt's;
- `default_stated`: the question asks for the value used when nothing is set ("by default", "if
  I never choose one", "unless I raise the limit", "por defecto"; `asks_default`) and the unit (or
  its term) says "default": a reference's "Default: KeepAliveTimeout 5", "The default value is
  256". Its weight (2.0) is not fitted with the others: the twelve weights stay as fitted, and
  this one was chosen on the development sets with each corpus left out in turn (2.0 won on five
  of six folds; docs/benchmarks.md#the-answering-unit-among-the-five-excerpts).
- `typed_terms`: `terms` when the unit holds the kind of answer asked (`type_match`), else 0: a
  unit that names the question's subject AND carries a command, a value or a name ("To limit
  upload bandwidth, use the --remote-ratelimit option" for "can I throttle how fast borg
  uploads?") over one that only names the subject or only carries some identifier. Its weight
  (0.25) is not fitted with the others either: it was chosen on the fourteen development sets
  with each of the seven corpora left out in turn (0.25 on every fold; `bench_answers.py --replay
  F --rank-study`, docs/benchmarks.md#ranking-the-units-as-learning-to-rank).

A unit's key terms include the words its CamelCase identifiers join (`unit_keys`:
"SSLSessionCacheTimeout" holds `ssl`, `session`, `cache`, `timeout`), so that a reference's
directive names what a question says in words.

The weights (`WEIGHTS`, `BIAS`) are a conditional logit fitted by `benchmarks/bench_answers.py
--fit` on the sample, pydoc and stdlib question sets (a unit is a positive when it, read with its
context, states the expected answer); the figures, and what each signal adds, are in
docs/benchmarks.md#answer-units. `bench_answers.py --transfer` measures them with each corpus
left out (docs/benchmarks.md#the-scorer-with-a-corpus-left-out): refitted on more corpora, or on
fewer signals, they carried over no better to corpora never fitted on. Signals that read the
question and the unit token by token (late interaction over MiniLM's token states, the question
rewritten as a statement) were measured the same way and not kept: none stated more with any
corpus left out, and a unit's token states cost a forward pass at question time
(`bench_answers.py --replay F --token-study`; docs/decisions.md#answer-units-and-the-passage).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from locallens.stemming import porter_stem
from locallens.text import NO_SPACE_CLASS, chords, shapes, symbols, without_chords
from locallens.units import CODE, DEFINITION, HEADER, ITEM, SENTENCE, Unit

# `modes.TermCounts`, named here without importing the modes module.
TermCountsLike = Callable[[Sequence[str]], tuple[int, dict[str, int]]]

FEATURES: tuple[str, ...] = (
    "cosine",
    "context_cosine",
    "terms",
    "context_terms",
    "type_match",
    "type_miss",
    "novelty",
    "rank",
    "short",
    "salient_terms",
    "new_identifier",
    "retrieval_share",
    "default_stated",
    "typed_terms",
)
# Fitted by `benchmarks/bench_answers.py --fit` (see the module docstring); `default_stated` and
# `typed_terms` chosen with each corpus left out (`bench_answers.py --replay F --weight-grid`).
WEIGHTS: dict[str, float] = {
    "cosine": 1.82,
    "context_cosine": -0.01,
    "terms": 1.58,
    "context_terms": -0.01,
    "type_match": 0.89,
    "type_miss": -0.89,
    "novelty": -0.76,
    "rank": 1.08,
    "short": -0.38,
    "salient_terms": 1.61,
    "new_identifier": 0.4,
    "retrieval_share": 0.62,
    "default_stated": 2.0,
    "typed_terms": 0.25,
}
# The conditional logit ranks a question's units and has no bias: this one keeps the best unit's
# probability where it was before the last three signals came (their mean +0.9 on the best unit).
BIAS = -2.9

# Words that carry no topic: function words and question words (English, Spanish), verbs
# every question uses, and the verbs of "how long does it take / last", "¿cuánto dura / tarda?".
_STOP_WORDS = """
    a an the and or but of to in on at for from by with about into onto as is are was were be been
    being am do does did done doing have has had having can could would should will shall may might
    must i me my we our you your yours he she it its they them their this that these those there here
    what which who whom whose when where why how much many long often there not no yes any some all
    each every if then than so such also just only very more most other use used using get gets got
    need needs want wants make makes know tell say says said mean means way ways one thing things
    el la los las un una unos unas lo de del al a en y o u que qué cual cuál cuales cuáles quien
    quién como cómo cuando cuándo donde dónde cuanto cuánto cuanta cuánta cuantos cuántos cuantas
    cuántas por para con sin sobre es son está están ser estar hay se su sus mi mis tu tus me te
    nos le les este esta estos estas ese esa esos esas eso esto muy más menos tiene tienen tengo
    puedo puede pueden hace hacer hago debo debe deben
    take takes took last lasts dura duran tarda tardan
"""
_STOP = frozenset(_STOP_WORDS.split())
# An English contraction ("didn't", "I'm", "isn't", "you'll", "it's") is a function word too;
# a possessive ("Stripe's") is its word.
_CONTRACTION = re.compile(r"(?:n['’]t|['’](?:m|re|ve|ll|d))$")
# A few words a Spanish question over English notes most often hinges on, by their English word
# (compared by its key, as every word is: a plural meets a plural, `días` and `days`):
# units of time and size, and the nouns questions about software and policies ask for.
_BRIDGE = {
    "puerto": "port",
    "puertos": "ports",
    "versión": "version",
    "semana": "week",
    "semanas": "weeks",
    "día": "day",
    "días": "days",
    "mes": "month",
    "meses": "months",
    "año": "year",
    "años": "years",
    "hora": "hour",
    "horas": "hours",
    "minutos": "minutes",
    "segundos": "seconds",
    "comando": "command",
    "orden": "command",
    "contraseña": "password",
    "contraseñas": "passwords",
    "clave": "key",
    "usuario": "user",
    "usuarios": "users",
    "archivo": "file",
    "fichero": "file",
    "carpeta": "directory",
    "servidor": "server",
    "copia": "backup",
    "copias": "backups",
    "respaldo": "backup",
    "datos": "data",
    "base": "database",
    "guardia": "call",
    "turno": "shift",
    "vacaciones": "leave",
    "permiso": "leave",
    "salario": "salary",
    "sueldo": "salary",
    "coste": "cost",
    "costo": "cost",
    "precio": "price",
    "límite": "limit",
    "despliegue": "deploy",
    "desplegar": "deploy",
    "reversión": "rollback",
    "predeterminado": "default",
    "defecto": "default",
    "error": "error",
    "excepción": "exception",
    "función": "function",
    "retención": "retention",
    "guardan": "kept",
    "conservan": "kept",
    "nocturnas": "nightly",
    "nocturna": "nightly",
}

BRIDGED = frozenset(_BRIDGE.values())  # the English words of bridged ones, as key_words gives them
_NO_SPACE = re.compile(f"[{NO_SPACE_CLASS}]")
_TOKEN = re.compile(r"[^\W_][\w'’.-]*[^\W_]|[^\W_]")
_DIGIT = re.compile(r"\d")
_IDENT = re.compile(
    r"`[^`\n]+`|\b\w+\(|\b[a-z]+_\w+|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]+[A-Z]\w*|(?<!\S)--?[A-Za-z][\w-]*|\b\w+\.\w+\("
)
_PATHISH = re.compile(
    r"(?:~|\.{0,2})/[\w.@/-]+|\b[\w-]+\.(?:md|txt|py|json|toml|ya?ml|conf|cfg|ini|sh|log|db)\b|https?://\S+"
)
_NAME = re.compile(r"(?<=[a-zà-ÿ,;] )[A-ZÀ-Þ][a-zà-ÿ]+(?: [A-ZÀ-Þ][a-zà-ÿ]+)*")
_NUMBER_WORDS = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|hundred|"
    r"once|twice|daily|weekly|monthly|nightly|yearly|annually|hourly|every)\b",
    re.I,
)

# What a question asks for, from its wording (English and Spanish). "What is the name of ...?" and
# Apertium's "Which is the option that ...?" ask as "Which name / option ...?" does.
# The organisations a "which / what X" question asks for by name (`asks_name`), which the
# catch-all "which X" of `_WANTS` leaves out.
_ORGANISATIONS = (
    r"vendor|company|provider|service|body|organi[sz]ation|firm|supplier|agency|partner|bank|insurer|auditor"
    r"|contractor|registrar"
)
_WANTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "code",
        re.compile(
            r"\b(?:which|what) (?:(?:is|are) (?:the |an? )?)?(?:\w+ )?(?:command|option|flag|function|method|module|class|exception|error|"
            r"keyword|statement|operator|builtin|built-in|call|setting|variable|argument|parameter|type|"
            r"attribute|hook|name|names|syntax|escape|prefix|suffix|decorator|package|library|tool|directive|constant|field|program|utility)s?\b"
            r"|\bhow (?:do|can|should) (?:i|you|we)\b|\bhow to\b|\bwhat (?:do i|should i) (?:run|type|call|use)\b"
            # "Is there a command / function ...?" asks for one as "Which command ...?" does
            r"|\bis there (?:a|an|any) (?:\w+ )?(?:command|option|flag|function|method|module|setting|variable|tool"
            r"|directive|escape sequence|hook|program|utility)\b"
            # Apertium renders "¿Cómo configuro...?" as "How I configure...?"
            r"|\bhow i (?!am\b|was\b)\w+"
            # The Spanish of the same wordings: the English nouns above in Spanish (one word
            # between, as "which debugger command"), "¿Cómo + a verb in the first person?" ("¿Cómo
            # consigo / configuro / dejo...?", as "how do I"); "¿con qué herramienta?" is "qué herramienta".
            r"|\b(?:qu[eé]|cu[aá]l(?:es)?(?: es| son)? (?:el|la|los|las)) (?:\w+ )?(?:comandos?|[oó]rden(?:es)?|opci[oó]n(?:es)?"
            r"|banderas?|funci[oó]n(?:es)?|m[eé]todos?|m[oó]dulos?|clases?|excepci[oó]n(?:es)?|errores|error|palabras? clave"
            r"|sentencias?|instrucci[oó]n(?:es)?|operador(?:es)?|llamadas?|ajustes?|par[aá]metros?|variables?|argumentos?"
            r"|tipos?|atributos?|constantes?|directivas?|herramientas?|prefijos?|sufijos?|decoradore?s?|paquetes?"
            r"|bibliotecas?|librer[ií]as?|sintaxis|ganchos?|campos?|nombres?)\b"
            r"|\bc[oó]mo (?:me |lo |la |los |las |le |les |se )?(?!\w+amente\b)\w{2,}(?:o|amos|emos|imos)\b"
            r"|\bc[oó]mo (?:se hace|se puede)\b",
            re.I,
        ),
    ),
    (
        "number",
        re.compile(
            r"\bhow (?:many|much|long|often|big|large|fast|old|far|deep|high|wide|small|low)\b|\bwhen (?:does|do|is|are|will|did|was|should)\b|"
            r"\bwhat time\b|\bsince (?:which|what|when)\b|"
            r"\b(?:which|what) (?:(?:is|are|was|were) (?:the |an? )?)?(?:\w+ )?(?:port|version|date|day|year|rate|limit|"
            r"percentage|size|number|amount|price|cost|threshold|timeout|deadline|temperature|address|ip|status|hour|level)\b"
            r"|\b(?:minimum|maximum|max|min)\b|"
            # "cuánto / cuándo" asks; unaccented, "cuanto / cuando" is also the conjunction ("cuando
            # la sintaxis exige...", "en cuanto"), read as a question word only where one opens it.
            # ... and not a clause before the question ("Cuando creo X, ¿dónde se guarda la clave?").
            r"\bcuánt[oa]s?\b|\bcuándo\b|\bcon qu[eé] frecuencia\b|(?:^(?=[^¿]*$)|¿)\s*(?:(?:a|de|en|cada|desde|hasta|por) )?cuan(?:t[oa]s?|do)\b|\bqué (?:puerto|versión|día|fecha|hora|año|límite|tarifa|precio|"
            r"temperatura|dirección|porcentaje|tamaño|número|cantidad|coste|umbral|plazo)\b|\ba qué hora\b|\bcada cu[aá]nto\b|\bm[ií]nim[oa]\b|\bm[aá]xim[oa]\b",
            re.I,
        ),
    ),
    ("name", re.compile(r"\bwho\b|\bwhich (?:team|person|vendor|company|engineer)\b|\bqui[eé]n(?:es)?\b", re.I)),
    (
        "path",
        re.compile(
            r"\bwhere\b|\b(?:which|what) (?:file|folder|directory|path|url|channel)\b|\bd[oó]nde\b"
            r"|\bqu[eé] (?:fichero|archivo|carpeta|directorio|ruta|url|canal)\b",
            re.I,
        ),
    ),
    # any other "which X": a named thing of the notes (a director, an MPM, a site), not an
    # organisation asked (`asks_name`); not "which widget" either, measured apart and left out
    # (a manual's widgets are all entries alike, and the one a chord binds lost to its neighbour)
    (
        "code",
        re.compile(
            rf"\bwhich (?!(?:is|are|one|ones|of|widgets?)\b)(?!(?:\w+ )?(?:{_ORGANISATIONS})s?\b)\w+",
            re.I,
        ),
    ),
)


# The kind of fact a question asks for, finer than `answer_type` and detected conservatively
# (English and Spanish): only wordings that leave no doubt, so that a fact of that kind missing
# from every excerpt is evidence the excerpts do not answer (`asked_fact`, `carries_fact`).
_ASKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("phone", re.compile(r"\b(?:phone|telephone|hotline)\b|\btel[eé]fonos?\b", re.I)),
    (
        "port",
        re.compile(r"\b(?:which|what) port\b|\bport (?:number|does|do|is)\b|\bqu[eé] puerto\b", re.I),
    ),
    (
        "price",
        re.compile(
            r"\bhow much (?:does|do|did|will|would|is|are)\b.{0,200}?\b(?:cost|charge|pay|price|fee)s?\b"
            r"|\bhow much (?:is|are) (?:paid|charged)\b"
            r"|\bhow much (?:does|do|did|will|would) \w+(?: \w+){0,6} cost\b|\b(?:price|pricing|fee|fees|budget)\b"
            r"|\bcu[aá]nto (?:cuesta|cuestan|cost[oó]|vale|valen|se cobra|se paga|se carga|pagamos|cobramos)\b"
            r"|\bqu[eé] (?:precio|tarifa|coste|costo)\b|\bpresupuesto\b|\bprecio\b",
            re.I,
        ),
    ),
    (
        "date",
        re.compile(
            r"\b(?:what|which|in which|in what) (?:year|date|day of the month)\b"
            r"|\bwhen (?:was|were|did|will|is|are) .{0,200}?\b(?:released|published|launched|founded|introduced|"
            r"announced|signed|held|scheduled|due|renewed|opened|closed)\b"
            r"|\b(?:release|launch|publication) date\b"
            r"|\b(?:en )?qu[eé] (?:a[nñ]o|fecha)\b|\bcu[aá]ndo (?:se )?(?:lanza|lanz[oó]|sale|sali[oó]|public[oó]|"
            r"publica|fund[oó]|firm[oó]|celebra|vence|termina|empieza|abre|cierra)\b",
            re.I,
        ),
    ),
    # "How often is the copy refreshed?", "¿Cada cuánto ...?": a period ("every Sunday", "300
    # seconds", "nightly").
    (
        "frequency",
        re.compile(r"\bhow (?:often|frequently)\b|\bcada cu[aá]nt[oa]s?\b|\bcon qu[eé] frecuencia\b", re.I),
    ),
    # "How long can the request line be?" may ask for a length as well as a time: no kind.
    (
        "duration",
        re.compile(
            r"\bhow long\b(?! (?:can|may|must|could|should|will|would) (?:\w+ ){1,4}be\b)"
            r"|\bhow many (?:seconds|minutes|hours|days|weeks|months|years)\b"
            r"|\bcu[aá]nto (?:dura|duran|tiempo|tarda|tardan)\b"
            r"|\bcu[aá]nt[oa]s (?:segundos|minutos|horas|d[ií]as|semanas|meses|a[nñ]os)\b",
            re.I,
        ),
    ),
    # "How much memory does it need?", "What is the maximum file size of an upload?", "¿Cuánto
    # espacio ocupa...?": an amount of data ("500 MB", "16 KiB", "10240000 bytes"). Not a font's
    # or a paper's size, not "how big" alone ("how big is the dirstack?" may ask for a count).
    (
        "size",
        re.compile(
            r"\bhow much (?:memory|ram|disk(?: space)?|space|storage|bandwidth)\b"
            r"|\b(?:file|message|upload|attachment|disk|memory|cache|buffer|body|request|photo|image|log|"
            r"database|backup|archive|repository|segment|chunk|block|page|packet)s? sizes?\b"
            r"|\bhow (?:big|large) (?:is|are|can|may|does|do|will|would|should)\b(?:(?! font| paper)[^?]){0,80}?"
            r"\b(?:files?|messages?|uploads?|attachments?|disks?|caches?|buffers?|bodies|body|logs?|databases?|"
            r"backups?|archives?|repositor(?:y|ies)|segments?|chunks?|packets?|images?|photos?)\b"
            r"|\bcu[aá]nta (?:memoria|RAM)\b|\bcu[aá]nto (?:espacio|disco|ocupa|ocupan|pesa|pesan)\b"
            r"|\bde qu[eé] tama[nñ]o\b(?! de (?:letra|fuente|papel))|\bqu[eé] tama[nñ]o (?:tiene|tienen|ocupa|ocupan)\b"
            r"|\btama[nñ]o (?:m[aá]ximo|m[ií]nimo) de(?:l| la| los| las)? (?:fichero|archivo|mensaje|adjunto|"
            r"subida|foto|imagen|disco|memoria|cach[eé]|b[uú]fer|cuerpo|registro|copia)",
            re.I,
        ),
    ),
    # "In which Varnish release ...", "Which PostgreSQL version ...", "¿Qué versión de ...?": a
    # version number (the last kind: "which version ... and on which port?" asks for the port).
    (
        "version",
        re.compile(r"\b(?:which|what) (?:\w+ )?(?:version|release)s?\b|\bqu[eé] (?:\w+ )?versi[oó]n(?:es)?\b", re.I),
    ),
)
_MONTHS = (
    r"January|February|March|April|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|enero|febrero|marzo|abril|mayo|junio|julio|agosto|"
    r"septiembre|setiembre|octubre|noviembre|diciembre"
)
_WEEKDAYS = (
    r"Mondays?|Tuesdays?|Wednesdays?|Thursdays?|Fridays?|Saturdays?|Sundays?|"
    r"lunes|martes|mi[eé]rcoles|jueves|viernes|s[aá]bados?|domingos?"
)
_UNITS_OF_TIME = (
    r"(?:milli)?seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|"
    r"segundos?|minutos?|horas?|d[ií]as?|semanas?|mes|meses|a[nñ]os?|[smhd]"
)
_COUNT = (
    r"an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
    r"forty|fifty|sixty|ninety|hundred|several|few|un|una|uno|dos|tres|cuatro|cinco|seis|siete|ocho|nueve|"
    r"diez|doce|quince|veinte|treinta|noventa"
)
_PERIODIC = (
    r"hourly|daily|nightly|weekly|fortnightly|monthly|quarterly|yearly|annually|every|each|once|twice|"
    r"times (?:a|an|per)|per (?:second|minute|hour|day|week|month|quarter|year)|"
    r"diari[oa]s?|semanal(?:es|mente)?|mensual(?:es|mente)?|anual(?:es|mente)?|cada|veces al"
)
# An amount of time: "300 seconds", "two weeks", "30-day".
_AMOUNT_OF_TIME = rf"(?:\d[\d.,]*[\s-]*|\b(?:{_COUNT})[\s-]+)(?:{_UNITS_OF_TIME})\b"
_CARRIES: dict[str, re.Pattern[str]] = {
    "phone": re.compile(r"(?<![\w.])\+?\(?\d[\d ().-]{5,}\d(?!\w|\.\d)"),
    "port": re.compile(r"(?<![\w.])\d{2,5}(?!\w|\.\d)|:\d{2,5}\b"),
    "price": re.compile(
        r"[€$£¥]\s?\d|\d[\d.,]*\s?(?:[€$£¥]|EUR|USD|GBP|CHF|euros?|dollars?|d[oó]lares|pounds?|k€|M€)"
        r"|\b(?:free of charge|for free|at no cost|gratis|gratuit[oa])\b"
        # a bare number labelled as an amount: "Budget: 48500" (a spreadsheet row), "precio = 12,50"
        r"|\b(?:budget|price|cost|fee|amount|presupuesto|precio|coste|costo|importe)s?\s*[:=]\s*\d",
        re.I,
    ),
    "date": re.compile(
        r"\b(?:19|20)\d\d\b|\b\d{1,2}[./-]\d{1,2}[./-]\d{2,4}\b"
        rf"|\b(?:{_MONTHS})\b|\b(?:{_WEEKDAYS})\b|\b\d{{1,2}}:\d\d\b",
        re.I,
    ),
    # "16.2", "v2.4.1", "version 6" (not an address: "127.0.0.1")
    "version": re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)?(?!\d|\.\d)|\b(?:version|release|versi[oó]n) v?\d+\b", re.I),
    "duration": re.compile(rf"{_AMOUNT_OF_TIME}|\b(?:forever|indefinitely|para siempre)\b", re.I),
    # an amount of data: "500 MB", "16KiB", "10240000 bytes", "2 gigabytes", "10M" (a size as a
    # configuration writes it)
    "size": re.compile(
        r"(?<![\w.])\d[\d.,]*\s?(?:[kKMGTP](?:i?B|[Bb]ytes?)|bytes?|octets?|kilobytes?|megabytes?|gigabytes?|"
        r"terabytes?|[kKMGT](?![\w.]))(?!\w)",
    ),
    # a period: an amount of time, a day of the week, or a word of recurrence ("every", "nightly")
    "frequency": re.compile(rf"{_AMOUNT_OF_TIME}|\b(?:{_WEEKDAYS})\b|\b(?:{_PERIODIC})\b", re.I),
}
ASKED_FACTS: tuple[str, ...] = tuple(name for name, _ in _ASKS)


def asked_fact(question: str) -> str | None:
    """The kind of fact the question asks for, when its wording leaves no doubt: "phone", "port",
    "price", "date", "frequency", "duration", "size" (an amount of data), "version", or None ("When was Python 3.12 released?" -> "date";
    "¿Cuál es el teléfono de soporte de Stripe?" -> "phone"; "When is the else block skipped?" ->
    None)."""
    for name, pattern in _ASKS:
        if pattern.search(question):
            return name
    return None


def carries_fact(text: str, kind: str) -> bool:
    """Whether `text` holds a value of the kind `asked_fact` names (a phone number, a port, an
    amount of money, a date or a time of day, a period, a duration, an amount of data, a version
    number)."""
    pattern = _CARRIES.get(kind)
    return bool(pattern and pattern.search(text))


# A question that asks which organisation or service does something ("which vendor provides ...",
# "¿qué entidad certificadora ...?") is answered by a name the question does not hold.
_ASKS_NAME = re.compile(
    rf"\b(?:which|what) (?:\w+ )?(?:{_ORGANISATIONS})s?\b"
    r"|\bqu[eé] (?:\w+ )?(?:entidad|empresa|proveedor|compa[nñ][ií]a|servicio|organismo|banco|aseguradora|"
    r"auditora|consultora)\b",
    re.I,
)
# A name in running text: a capitalised word after a word (not a sentence's first), or an acronym.
_PROPER_NAME = re.compile(r"(?<=[\w,;:)] )[A-Z][\w&.-]*[A-Za-z0-9]|\b[A-Z]{2,}[\w-]*")


def asks_name(question: str) -> bool:
    """Whether the question asks which organisation, vendor or service does something."""
    return bool(_ASKS_NAME.search(question))


def carries_name(text: str, question_keys: frozenset[str]) -> bool:
    """Whether `text` holds a name (`_PROPER_NAME`) that is not one of the question's own words."""
    return any(key_terms(name) - question_keys for name in _PROPER_NAME.findall(text))


def _fold(word: str) -> str:
    """Lower case without accents: `Versión` -> `version`."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@lru_cache(maxsize=65536)
def _key(token: str, refined: bool = False) -> str | None:
    """The key a token is compared by: five letters of a word (so `minutes` and `minutos`,
    `version` and `versión`, `required` and `requires` meet), a number or identifier whole.

    `refined` (the refusal's keys, `key_terms`): a possessive is its word's (`ISP's` as `ISP`),
    a hyphenated word is keyed without its hyphens (`keep-alive` meets `KeepAlive`), a plural
    of four or five letters as its singular (`_singular`), and a word whose stem (`porter_stem`)
    is shorter than five letters by its stem (`running` meets `run`). The unit scorer keeps the plain keys
    its weights were fitted on: on them too, 3 fewer answers stated on the development sets
    (docs/decisions.md#the-refusals-key-terms-names-as-documentation-writes-them)."""
    lowered = token.lower()
    if lowered in _STOP or _CONTRACTION.search(lowered) or (lowered[:-2] in _STOP and lowered[-2:] in ("'s", "’s")):
        return None
    if refined:
        lowered, token = POSSESSIVE.sub("", lowered), POSSESSIVE.sub("", token)
    if lowered in _BRIDGE:  # the English word's key
        english = _BRIDGE[lowered]
        return _stemmed(_singular(english, english)) if refined else english[:5]
    if _DIGIT.search(token) or "_" in token or "." in token.strip("."):
        return lowered.strip(".'’-")
    folded = _fold(lowered).strip("'’-.")
    if refined:
        folded = _singular(token, folded.replace("-", ""))
    if len(folded) < 3 and not token.isupper():
        return None
    return _stemmed(folded) if refined else folded[:5]


def _stemmed(folded: str) -> str:
    """A refined key: five letters of the word, or its stem (`porter_stem`) where that is shorter,
    so that a short word and its inflections meet where five letters do not: "running" and
    "run", "exited" and "exit", "cached" and "cache". A singular in "-s" is left alone: the
    stemmer reads "alias" as "alia", and "aliases" as "alias"."""
    if folded.isalpha() and not folded.endswith(_NOT_PLURAL):
        stem = porter_stem(folded)
        if 3 <= len(stem) < 5:
            return stem
    return folded[:5]


# A possessive ("ISP's", "Varnish's"): compared, counted and named by its word (`refined` keys).
POSSESSIVE = re.compile(r"['’]s$", re.I)
# Endings of a singular word of four or five letters ("class", "status", "axis", "alias").
_NOT_PLURAL = ("ss", "us", "is", "as")


def _singular(token: str, folded: str) -> str:
    """A plural of four or five letters without its "s" ("files", "ports", "logs", "PNGs", "APIs"
    as "file", "port", "log", "png", "api"), down to three letters: their first five letters never
    met their singular's; a longer word's five first letters drop its "s" anyway."""
    acronym = len(token) > 3 and token.endswith("s") and token[:-1].isupper()
    if folded.endswith("s") and 4 <= len(folded) <= 5 and (acronym or not folded.endswith(_NOT_PLURAL)):
        return folded[:-1]
    return folded


def bridged_word(word: str) -> str | None:
    """The English word `word` is bridged to (`_BRIDGE`: `puerto` -> `port`), or None."""
    return _BRIDGE.get(word.lower())


# A word with a hyphen between letters and no digit ("keep-alive", "Apache-style", "on-call"; not
# "sha-256" or "utf-8", compared whole): with `refined` keys, its parts are key terms too.
_HYPHENATED = re.compile(r"^\D*[^\W\d_]-[^\W\d_]\D*$")


def key_terms(text: str, *, refined: bool = False) -> frozenset[str]:
    """The key terms of `text`: keys of its content words, numbers and identifiers (`_key`); an
    identifier's parts too (`shutil.rmtree` holds `rmtree`), and with `refined` keys a hyphenated
    word's (`keep-alive` holds `keep` and `alive`). A key chord's letters are none
    (`text.without_chords`: "Ctrl-R" is keyed by `symbol_keys`)."""
    keys = set()
    for token in _TOKEN.findall(without_chords(text)):
        key = _key(token, refined)
        if key:
            keys.add(key)
        hyphenated = refined and bool(_HYPHENATED.match(token))
        if "_" in token or "." in token or hyphenated:
            for part in re.split(r"[._-]+" if hyphenated else r"[._]+", token):
                part_key = _key(part, refined) if part else None
                if part_key:
                    keys.add(part_key)
    return frozenset(keys)


# A CamelCase identifier ("SSLSessionCacheTimeout", "CacheMaxFileSize", "KeepAlive") and its
# words ("SSL Session Cache Timeout"): a reference's directive names what a question says in words.
_CAMEL = re.compile(r"\b[A-Za-z]*[a-z][A-Z][A-Za-z]*|\b[A-Z]{2,}[a-z][A-Za-z]*")
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")


def unit_keys(text: str, *, refined: bool = False) -> frozenset[str]:
    """The key terms of a unit's text (`key_terms`), with the keys of the words its CamelCase
    identifiers join: "Default: CacheMaxFileSize 1000000" holds `cache`, `file` and `size`."""
    keys = key_terms(text, refined=refined)
    parts = [" ".join(_CAMEL_PART.findall(ident)) for ident in _CAMEL.findall(text)]
    return keys | key_terms(" ".join(parts), refined=refined) if parts else keys


def key_words(text: str, *, refined: bool = False) -> dict[str, str]:
    """The key terms of `text` (`key_terms`), each with the word it came from: the word a store's
    keyword index can count (a Spanish word bridged to English, `_BRIDGE`, by its English key;
    with `refined` keys, a possessive by its word, `ISP` of "ISP's", and of two words of one key
    the capitalised one, a name: "Scheduler" of "schedule ... the Windows Task Scheduler").
    Runs of a script written without spaces are left out: their words are not delimited."""
    out: dict[str, str] = {}
    for token in _TOKEN.findall(without_chords(text)):
        if _NO_SPACE.search(token):
            continue
        key = _key(token, refined)
        if not key:
            continue
        if key not in out:
            word = POSSESSIVE.sub("", token) if refined else token
            out[key] = _BRIDGE.get(word.lower(), word)
        elif refined and token[:1].isupper() and not out[key][:1].isupper():
            # "schedule ... the Windows Task Scheduler": the key's word is the name.
            out[key] = POSSESSIVE.sub("", token)
    return out


def answer_type(question: str) -> str | None:
    """What the question asks for: "code", "number", "name", "path", or None (and "meaning",
    `question_terms`, for a symbol's)."""
    for name, pattern in _WANTS:
        if pattern.search(question):
            return name
    return None


def has_type(unit: Unit, wants: str) -> bool:
    """Whether the unit holds an answer of the kind asked for."""
    text = unit.text
    if wants == "number":
        return bool(_DIGIT.search(text) or _NUMBER_WORDS.search(text))
    if wants == "code":
        return unit.kind in (CODE, DEFINITION) or bool(_IDENT.search(text))
    if wants == "name":
        return bool(_NAME.search(text))
    if wants == "path":
        return bool(_PATHISH.search(text) or _NAME.search(text))
    if wants == "meaning":
        return unit.kind in (SENTENCE, DEFINITION, ITEM)
    return False


# A question about the value used when nothing is set ("by default", "out of the box", "if I never
# choose one", "if I don't say which", "when none is given", "unless I raise the limit", "por
# defecto") and a unit that states a default.
_ASKS_DEFAULT = re.compile(
    r"\bby default\b|\bdefault (?:value|setting|level|limit|port|size)\b|\bout of the box\b|\bnormally\b"
    # a setting left alone: "if I never choose one", "if I don't change anything", "if I leave its
    # settings alone", "unless I raise the limit" (not "what happens if I don't run the migrations?")
    r"|\bif (?:i|you|we) (?:never|don'?t|do not|didn'?t|did not) (?:\w+ )?(?:change|set|configure|specify|give"
    r"|choose|pick|pass|touch|provide|select|override|tune|adjust|say|tell|name|mention)\b"
    r"|\bif (?:i|you|we) leave\b.{0,200}?\balone\b"
    # a value not given: "when none is given", "if no port is specified", "if omitted"
    r"|\b(?:when|if) (?:none|nothing|no \w+) is (?:given|set|specified|chosen|passed|provided|named)\b"
    r"|\b(?:when|if) (?:it is |it's )?(?:omitted|left out|not (?:given|set|specified))\b"
    r"|\bunless (?:i|you|we) (?:raise|change|set|increase|lower|configure|override|specify|pass|give|adjust)\b"
    r"|\bpor defecto\b|\bpredeterminad[oa]s?\b"
    # "si no cambio nada", "si nunca elijo ninguna", "si no le digo ninguno"
    r"|\bsi (?:no|nunca) (?:(?:le|lo|la|les) )?(?:cambio|toco|elijo|indico|configuro|pongo|digo|especifico|paso|doy)\b",
    re.I,
)
_SAYS_DEFAULT = re.compile(r"\bdefaults?\b|\bpor defecto\b|\bpredeterminad", re.I)


def asks_default(question: str) -> bool:
    """Whether the question asks for the value used when nothing is set."""
    return bool(_ASKS_DEFAULT.search(question))


def says_default(text: str) -> bool:
    """Whether a unit speaks of a default ("Default: 10pt", "defaults to 'html'")."""
    return bool(_SAYS_DEFAULT.search(text))


@dataclass(frozen=True, slots=True)
class QuestionTerms:
    text: str
    terms: frozenset[str]
    wants: str | None
    # Each key term's weight: its word's inverse document frequency over the brain's chunks
    # (0..1), or 1 for every term when the brain's counts are unknown.
    salience: dict[str, float] | None = None


def question_terms(question: str, term_counts: TermCountsLike | None = None) -> QuestionTerms:
    """The question's key terms (its symbols among them, `symbol_keys`), the kind of answer it
    asks for, and each term's salience in the brain (`term_counts`: the store's keyword counts,
    `modes.TermCounts`; a symbol, which the keyword index does not hold, weighs 1)."""
    salience = None
    words = key_words(question)
    if term_counts is not None and words:
        of_word = word_salience(list(words.values()), term_counts)
        salience = {k: of_word[w] for k, w in words.items()}
    symbol_terms = symbol_keys(question)
    wants = answer_type(question) or ("meaning" if symbol_terms and _ASKS_MEANING.search(question) else None)
    return QuestionTerms(question, key_terms(question) | symbol_terms, wants, salience)


# "What does $? hold?", "What does ${#var} give me?", "What does -> mean ...?": what a symbol or
# construct means, which a manual says in prose (its entry's description), not in an example of
# code that uses it.
_ASKS_MEANING = re.compile(
    r"\bwhat (?:does|do|is|are) (?:the )?\S*[^\w\s?]\S* (?:\w+ )?(?:do|does|mean|hold|give|return|expand|stand)",
    re.I,
)


def symbol_keys(text: str) -> frozenset[str]:
    """The symbols of `text` (`text.symbols`: "$?", "<<<", "//") and its constructs by their
    shape (`text.shapes`: "${#x}" for `${#var}` and `${#parameter}`), each keyed as "§" + the
    symbol, a key no word has: a unit holding one as written holds that key term. A shell
    manual lists its special parameters by name, as terms (`?::`, `#::`): such a term holds the
    symbol that expands it (`$?`). A command-line option is keyed as written too (`_FLAG`:
    "§--prune-empty"), which its words alone do not tell from its neighbours'; a key chord by
    its key whatever its notation (`text.chords`: "Ctrl-R", "C-r" and "^R" as "§^R"), its
    letters no word of `key_terms`."""
    parameters = ["$" + name for name in _PARAMETER_TERM.findall(text)] if "::" in text else []
    flags = _FLAG.findall(text) if "-" in text else []
    return frozenset("§" + symbol for symbol in (*symbols(text), *shapes(text), *chords(text), *parameters, *flags))


# A term of one character that is not a letter or digit (`?::`, `_::`): a special parameter.
_PARAMETER_TERM = re.compile(r"(?<!\S)([^\w\s]|_)::(?!\S)")
# A command-line option as written (`--prune-empty`, `--no-ff`, `-s`; at a word's start, not
# `${var:-word}`'s). Its words key as its first word alone (`prune`), so `--prune-empty` and
# `--prune-degenerate` would be one key; as written, the option a question names is held by its
# own entry only.
_FLAG = re.compile(r"(?<![^\s(\[{\"'‘“`])--?[A-Za-z](?:[\w-]*[A-Za-z0-9])?(?![\w-])")


def word_salience(words: Sequence[str], term_counts: TermCountsLike | None) -> dict[str, float]:
    """Each word's inverse document frequency over the brain's chunks, log((N + 1) / (df + 1)) /
    log(N + 1): 1 for a word no chunk holds, near 0 for one most chunks hold; 1 for every word
    when the brain's counts are unknown (`term_counts` None, or an empty brain)."""
    if term_counts is None:
        return dict.fromkeys(words, 1.0)
    total, counts = term_counts(list(words))
    if total <= 0:
        return dict.fromkeys(words, 1.0)
    return {w: math.log((total + 1) / (min(counts.get(w, 0), total) + 1)) / math.log(total + 1) for w in words}


def context_of(unit: Unit, units: Sequence[Unit], path: str = "") -> list[str]:
    """What introduces `unit`: its setup line, its table's header row, its term, its section."""
    by_index = {u.index: u for u in units if u.excerpt == unit.excerpt}
    out = []
    if unit.setup is not None and unit.setup in by_index:
        out.append(by_index[unit.setup].text)
    if unit.header is not None and unit.header in by_index:
        out.append(by_index[unit.header].text)
    if unit.term:
        out.append(unit.term)
    if unit.section:
        out.append(unit.section)
    if path:
        out.append(re.sub(r"[-_/.]+", " ", path))
    return out


def features(
    question: QuestionTerms,
    units: Sequence[Unit],
    cosines: np.ndarray,
    paths: Sequence[str],
    retrieval: Sequence[float] | None = None,
) -> np.ndarray:
    """One row of `FEATURES` per unit. `cosines[i]` is unit i's cosine with the question;
    `paths[n - 1]` the file of excerpt n, `retrieval[n - 1]` its retrieval score."""
    n_terms = max(1, len(question.terms))
    salience = question.salience or {}
    weights = {k: salience.get(k, 1.0) for k in question.terms}
    weight_sum = sum(weights.values()) or 1.0
    top = retrieval[0] if retrieval else 0.0
    position = {(u.excerpt, u.index): i for i, u in enumerate(units)}
    asks_default_ = asks_default(question.text)
    rows = np.zeros((len(units), len(FEATURES)), dtype=np.float64)
    asked_symbols = frozenset(t for t in question.terms if t.startswith("§"))
    for i, unit in enumerate(units):
        own = unit_keys(unit.text)
        context_text = " ".join(context_of(unit, units, paths[unit.excerpt - 1] if paths else ""))
        context = key_terms(context_text)
        if asked_symbols:  # only the question's: a unit's other symbols count as nothing it says
            # A description under the symbol's own term (`!!::`, `${parameter:-word}::`) says what
            # it does: the term's symbols are the unit's own.
            own |= symbol_keys(f"{unit.text} {unit.term}") & asked_symbols
            context |= symbol_keys(context_text) & asked_symbols
        linked = [j for j in (unit.setup, unit.header) if j is not None]
        linked_cos = [float(cosines[position[(unit.excerpt, j)]]) for j in linked if (unit.excerpt, j) in position]
        wants = question.wants
        typed = has_type(unit, wants) if wants else False
        new_identifier = wants == "code" and any(
            key_terms(ident) - question.terms for ident in _IDENT.findall(f"{unit.text} {unit.term}")
        )
        share = retrieval[unit.excerpt - 1] / top if retrieval and top > 0 else 1.0
        default_stated = asks_default_ and says_default(f"{unit.text} {unit.term}")
        terms = len(own & question.terms) / n_terms
        rows[i] = (
            float(cosines[i]),
            max(linked_cos, default=0.0),
            terms,
            len((context - own) & question.terms) / n_terms,
            1.0 if wants and typed else 0.0,
            1.0 if wants and not typed else 0.0,
            len(own - question.terms) / max(1, len(own)),
            1.0 / unit.excerpt,
            1.0 if len(own) < 4 else 0.0,
            sum(w for k, w in weights.items() if k in own) / weight_sum,
            1.0 if new_identifier else 0.0,
            share,
            1.0 if default_stated else 0.0,
            terms if wants and typed else 0.0,
        )
    return rows


# Signals only the ranking reads: the refusal's `best_unit` (`extractive.evidence_features`) reads
# the linear score without them (`refusal_linear`), the score its weights were fitted on. With
# `typed_terms` in it, one of sample's twelve near misses was answered (8 -> 7 refused).
RANKING_ONLY: tuple[str, ...] = ("typed_terms",)


def refusal_linear(rows: np.ndarray) -> np.ndarray:
    """Each unit's linear score (before the logistic, without `BIAS`) without `RANKING_ONLY`."""
    w = np.array([0.0 if name in RANKING_ONLY else WEIGHTS[name] for name in FEATURES], dtype=np.float64)
    return rows @ w


def combine(rows: np.ndarray, weights: dict[str, float] | None = None, bias: float | None = None) -> np.ndarray:
    """The probability that each unit states the answer, from its feature row."""
    w = np.array([(weights or WEIGHTS)[name] for name in FEATURES], dtype=np.float64)
    z = rows @ w + (BIAS if bias is None else bias)
    return 1.0 / (1.0 + np.exp(-z))


def is_context_only(unit: Unit) -> bool:
    """A table's header row says what the columns are, not an answer."""
    return unit.kind == HEADER
