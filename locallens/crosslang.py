"""Questions in another language than the notes: a Spanish question over English notes.

The packaged embedder reads English: a Spanish question's vector lands near the Spanish notes of
a brain, and far from the English note that answers it, whose commands, names and numbers it
shares. So a question in Spanish (`claims.question_language`) is also searched in English: its
English rendering is embedded and searched beside the question itself, and each chunk keeps the
better of its two cosines and its keyword matches for the words of both
(`retrieval.hybrid_search`); a Spanish note still matches the Spanish question as before.

The rendering comes from Apertium's rule-based Spanish-to-English translator (Debian's
`apertium-eng-spa`; offline, in a worker thread while the question itself is embedded) when it
is installed; otherwise from a word-by-word gloss: the words `unit_scores` bridges to
English, and the words a translation keeps (numbers, identifiers, names). Measured in
docs/benchmarks.md#spanish-questions-over-english-notes. `LOCALLENS_TRANSLATE=0` turns it off.

Apertium's dictionary is of the general language: it renders the words of software
documentation in their everyday sense ("comando" as "commando", "pila" as "battery", "correo" as
"post", "por defecto" as "by defect"). Those words are put in English before the question is
translated (`DOC_TERMS`; Apertium passes a word it does not know through as it is), and an
identifier the translation mangled ("-O" rendered "-Or") is added back (`keep_identifiers`).
An English question in a user's everyday words ("folder", "shortcut", "wildcard") is searched
and read in documentation's words too, the way a Spanish one is in English
(`documentation_wording`, `USER_WORDS`); so is every English rendering.

Apertium runs as one long-lived pipeline in null-flush mode (`Translator`: once started, ~0.1 s,
a question costs ~2 ms, against ~0.17 s for a new `apertium` process chain per question).
"""

from __future__ import annotations

import atexit
import os
import re
import select
import shlex
import shutil
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from locallens.config import env_flag
from locallens.domain import Rendering

if TYPE_CHECKING:
    import numpy as np

# Apertium's mode for Spanish to English, and how long one translation may take before the
# question is searched without it (a first run reads ~5 MB of transducers: ~0.2 s here).
APERTIUM_MODE = "spa-eng"
TRANSLATE_TIMEOUT_S = 5.0
_TOKEN = re.compile(r"[^\W_][\w'’.-]*[^\W_]|[^\W_]")
# A question's words as `keep_identifiers` reads them: a flag with its dashes (`-O`, `--force`),
# else `_TOKEN`'s words.
_KEPT_TOKEN = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*|[^\W_][\w'’.-]*[^\W_]|[^\W_]")
# A word a translation should keep as it is: a digit, inner punctuation, a capital past the first letter.
_IDENTIFIER_LIKE = re.compile(r"\d|[-._]|^.+[A-Z]")
# Apertium's stream format reserves these characters; text passed to its pipeline escapes them.
_STREAM_SPECIAL = re.compile(r"([\[\]^$/\\<>@*#~{}|+])")
_STREAM_ESCAPED = re.compile(r"\\(.)")
# Commands of a Unix system whose names are Spanish words, which Apertium renders in their Spanish
# sense: "sed" as "are" (or "thirst"), "echo" as "throw", "vi" as "saw" ("modo vi", "the editor in
# way saw"). Each is passed to the pipeline as a superblank (`[vi]`), which the stream format
# copies through untranslated, then unwrapped. ("su" is left: it is Spanish's commonest possessive.)
# Every `Translator` does so, the morphological analyser too (`_analysis`): a superblank is no word
# to tag, so `relative_form` reads the question as if the command's name were not in it, where it
# read "vi" as "ver" and "echo" as "echar".
KEPT_COMMANDS = ("vi", "sed", "echo")
_KEPT_COMMAND = re.compile(r"(?<![\w-])(" + "|".join(KEPT_COMMANDS) + r")(?![\w-])")
_KEPT_BLANK = re.compile(r"(?<!\\)\[(" + "|".join(KEPT_COMMANDS) + r")\]")

# Words of software documentation whose sense Apertium's general-language dictionary misses, put
# in English before translation (longest first, whole words, any case). Written from the misses
# of the pydoc-es and postfix-es question sets (Python's and Postfix's manuals) and the other
# inflections of the same words, and judged on es and apache-es, which it was not written from
# (docs/decisions.md#cross-language-questions). Apertium keeps an English word it does not know
# as it is, so "¿Qué comando del depurador pone un punto de interrupción?" is rendered "Which
# command of the debugger puts a breakpoint?" instead of "Which commando ... a point of
# interruption?". A word in the list is a documentation sense, never a name or an identifier.
DOC_TERMS: dict[str, str] = {
    "punto de interrupción": "breakpoint",
    "puntos de interrupción": "breakpoints",
    "por defecto": "default",
    "por omisión": "default",
    "predeterminado": "default",
    "predeterminada": "default",
    "predeterminados": "default",
    "predeterminadas": "default",
    "comando": "command",
    "comandos": "commands",
    "pila": "stack",
    "traza": "trace",
    "trazas": "trace",
    "cadena": "string",
    "cadenas": "strings",
    "gestor": "manager",
    "gestores": "managers",
    "se lanza": "is raised",
    "se lanzan": "get raised",
    "lanza": "raises",
    "lanzan": "raise",
    "lanzar": "raise",
    "sentencia": "statement",
    "sentencias": "statements",
    "integrada": "built-in",
    "integrado": "built-in",
    "integradas": "built-in",
    "integrados": "built-in",
    "menor que": "less than",
    "mayor que": "greater than",
    "bloque": "block",
    "bloques": "blocks",
    "correo": "mail",
    "correos": "mails",
    "correo electrónico": "email",
    "cola": "queue",
    "colas": "queues",
    "diferido": "deferred",
    "diferidos": "deferred",
    "diferida": "deferred",
    "diferidas": "deferred",
    "dominio": "domain",
    "dominios": "domains",
    "registro": "log",
    "registros": "logs",
    "credenciales": "credentials",
    "ajuste": "setting",
    "ajustes": "settings",
    "reintentar": "retry",
    "reintenta": "retries",
    "reintentando": "retrying",
    "reintento": "retry",
    "reintentos": "retries",
    "remitente": "sender",
    "remitentes": "senders",
    "destinatario": "recipient",
    "destinatarios": "recipients",
    "enganchar": "hook",
    # General documentation vocabulary, chosen from a list of ~250 common software words and
    # phrases, each sent through Apertium in a neutral sentence ("la X está aquí", "Quiero X
    # ahora."): only those it rendered in another sense or left in Spanish are here ("cabecera"
    # kept as it is, "minúsculas" -> "tiny", "archivo" -> "archive", "tiempo de espera" -> "time
    # of wait", "reanudar" -> "restart", "activar" -> "actuate"). Not written from any question set.
    "cabecera": "header",
    "cabeceras": "headers",
    "encabezado": "header",
    "encabezados": "headers",
    "minúscula": "lowercase",
    "minúsculas": "lowercase",
    "mayúscula": "uppercase",
    "mayúsculas": "uppercase",
    "caché": "cache",
    "cachés": "caches",
    "archivo": "file",
    "archivos": "files",
    "sistema de archivos": "file system",
    "sistemas de archivos": "file systems",
    "sistema de ficheros": "file system",
    "bitácora": "log",
    "instantánea": "snapshot",
    "instantáneas": "snapshots",
    "volcado": "dump",
    "volcados": "dumps",
    "reiniciar": "restart",
    "reinicia": "restarts",
    "apagar": "shut down",
    "demonio": "daemon",
    "demonios": "daemons",
    "cifrado": "encryption",
    "cifrar": "encrypt",
    "descifrar": "decrypt",
    "firma": "signature",
    "firmas": "signatures",
    "huella": "fingerprint",
    "huellas": "fingerprints",
    "suma de comprobación": "checksum",
    "sumas de comprobación": "checksums",
    "búfer": "buffer",
    "búferes": "buffers",
    "desmontar": "unmount",
    "entorno": "environment",
    "entornos": "environments",
    "variable de entorno": "environment variable",
    "variables de entorno": "environment variables",
    "consulta": "query",
    "consultas": "queries",
    "esquema": "schema",
    "esquemas": "schemas",
    "bloqueo": "lock",
    "bloqueos": "locks",
    "cerrojo": "lock",
    "interbloqueo": "deadlock",
    "tiempo de espera": "timeout",
    "tiempos de espera": "timeouts",
    "caducidad": "expiry",
    "caducar": "expire",
    "caduca": "expire",
    "caducan": "expire",
    "salida estándar": "standard output",
    "entrada estándar": "standard input",
    "salida de error": "standard error",
    "redirección": "redirection",
    "analizador": "parser",
    "cadena de texto": "string",
    "cadenas de texto": "strings",
    "expresión regular": "regex",
    "expresiones regulares": "regexes",
    "coincidencia": "match",
    "coincidencias": "matches",
    "comodín": "wildcard",
    "comodines": "wildcards",
    "conmutador": "switch",
    "subcomando": "subcommand",
    "subcomandos": "subcommands",
    "atajo de teclado": "keyboard shortcut",
    "atajos de teclado": "keyboard shortcuts",
    "línea de comandos": "command line",
    "línea de órdenes": "command line",
    "intérprete de órdenes": "shell",
    "complemento": "plugin",
    "complementos": "plugins",
    "librería": "library",
    "librerías": "libraries",
    "desinstalar": "uninstall",
    "plantilla": "template",
    "plantillas": "templates",
    "marcador de posición": "placeholder",
    "nombre de usuario": "username",
    "nombre de host": "hostname",
    "red": "network",
    "redes": "networks",
    "cortafuegos": "firewall",
    "proxy inverso": "reverse proxy",
    "balanceo de carga": "loads balancing",
    "equilibrio de carga": "loads balancing",
    "réplica": "replication",
    "réplicas": "replication",
    "clúster": "cluster",
    "purgar": "purge",
    "vaciar": "empty",
    "sobrescribir": "overwrite",
    "renombrar": "rename",
    "detener": "stop",
    "pausar": "pause",
    "reanudar": "resume",
    "activar": "enable",
    "desactivar": "disable",
    "deshabilitar": "disable",
    "en segundo plano": "in the background",
    "en primer plano": "in the foreground",
    "de solo lectura": "read-only",
    "solo lectura": "read-only",
    "sin conexión": "offline",
    "marca de tiempo": "timestamp",
    "marcas de tiempo": "timestamps",
    "codificación": "encoding",
    "juego de caracteres": "character set",
    "salto de línea": "line break",
    "saltos de línea": "line breaks",
    "fin de línea": "end of line",
    "sangría": "indentation",
    "coma flotante": "floating point",
    "arreglo": "array",
    "arreglos": "arrays",
    "espacio de nombres": "namespace",
    "espacios de nombres": "namespaces",
    "ámbito": "scope",
    "sobrecarga": "overload",
    # and the verbs' first and third persons, as questions use them ("¿Cómo reanudo...?")
    "reinicio": "restart",
    "reinician": "restart",
    "reanudo": "resume",
    "reanuda": "resumes",
    "desactivo": "disable",
    "desactiva": "disables",
    "deshabilito": "disable",
    "deshabilita": "disables",
    "detengo": "stop",
    "detiene": "stops",
    "renombro": "rename",
    "renombra": "renames",
    "purgo": "purge",
    "purga": "purges",
    "desinstalo": "uninstall",
    "desinstala": "uninstalls",
    "sobrescribo": "overwrite",
    "sobrescribe": "overwrites",
    "desmonto": "unmount",
    "desmonta": "unmounts",
    # Shell, terminal and editor vocabulary (fifth 2026-12-04 round), by the same method: 282
    # words and phrases of shells, terminals, line editors, job control and configuration, chosen from general
    # knowledge (benchmarks/data/apertium_probe_words.txt, `benchmarks/apertium_probe.py`), each
    # sent through Apertium in a neutral sentence ("El historial está aquí.", "Quiero cargar
    # ahora.", "El fichero anterior está aquí."); those it rendered in another sense or left in
    # Spanish are here ("historial" -> "record", "salida" -> "start", "búsqueda" -> "research",
    # "pestaña" -> "eyelash", "cargar" -> "upload", "modo" -> "way", "anterior" -> "anterior",
    # "oculto" -> "unseen", "devolver" -> "give", "anidar" -> "shelter", "espacio en blanco" ->
    # "space in target"). Words with two documentation senses were left out ("entrada": input or
    # entry; "esperar": wait or expect; "equipo", "tema", "llave", "núcleo", "guion"). An English
    # word that is also a Spanish word form is translated again: "load" is the imperative of
    # "loar" (rendered "praise"), so "cargar" is put as "loads"; "as soon as" came out "ace soon ace".
    "historial": "history",
    "historiales": "histories",
    "subcarpeta": "subfolder",
    "subcarpetas": "subfolders",
    "ruta": "path",
    "rutas": "paths",
    "órdenes": "commands",
    "pestaña": "tab",
    "pestañas": "tabs",
    # A user interface's type: "letra" alone is a letter of the alphabet.
    "tamaño de letra": "font size",
    "tipo de letra": "font",
    "tipos de letra": "fonts",
    "captura de pantalla": "screenshot",
    "capturas de pantalla": "screenshots",
    "barra invertida": "backslash",
    "comilla": "quote",
    "comillas": "quotes",
    "corchete": "bracket",
    "corchetes": "brackets",
    "modificador": "modifier",
    "modificadores": "modifiers",
    "inicio de sesión": "login",
    "cierre de sesión": "logout",
    "salida": "output",
    "salidas": "outputs",
    "código de salida": "exit code",
    "códigos de salida": "exit codes",
    "estado de salida": "exit status",
    "autocompletado": "autocompletion",
    "autocompletar": "autocomplete",
    "búsqueda": "search",
    "búsquedas": "searches",
    "editor de línea": "line editor",
    "modo": "mode",
    "modos": "modes",
    "directorio de trabajo": "working directory",
    "directorio personal": "home directory",
    "carpeta personal": "home folder",
    "tabla hash": "hash table",
    "espacio en blanco": "whitespace",
    "espacios en blanco": "whitespace",
    "separador": "separator",
    "separadores": "separators",
    "combinación de teclas": "key combination",
    "combinaciones de teclas": "key combinations",
    "cargar": "loads",
    "cargo": "loads",
    "carga": "loads",
    "cargan": "loads",
    "cargado": "loaded",
    "cargada": "loaded",
    "cargados": "loaded",
    "cargadas": "loaded",
    "recargar": "reload",
    "recarga": "reloads",
    "teclear": "type",
    "tecleo": "type",
    "teclea": "types",
    "tecleado": "typed",
    "presionar": "press",
    "presiono": "press",
    "presiona": "presses",
    "entrecomillar": "quote",
    "recortar": "trim",
    "anidar": "nest",
    "anidado": "nested",
    "anidada": "nested",
    "anidados": "nested",
    "anidadas": "nested",
    "devolver": "return",
    "devuelve": "returns",
    "devuelven": "return",
    "devuelto": "returned",
    "coincide": "matches",
    "coinciden": "match",
    "coincidir": "match",
    # and configuration, web and mail vocabulary, by the same probe ("política" -> "politics",
    # "destino" -> "fate", "solicitud" -> "application", "punto de montaje" -> "point of setting",
    # "punto final" -> "full stop", "reenviar" and "denegar" left in Spanish)
    "política": "policy",
    "políticas": "policies",
    "destino": "destination",
    "destinos": "destinations",
    "solicitud": "request",
    "solicitudes": "requests",
    "reenviar": "forward",
    "reenvía": "forwards",
    "reenvío": "forward",
    "reenvíos": "forwards",
    "denegar": "deny",
    "deniega": "denies",
    "punto de montaje": "mount point",
    "puntos de montaje": "mount points",
    "punto final": "endpoint",
    "puntos finales": "endpoints",
    "host virtual": "virtual host",
    "hosts virtuales": "virtual hosts",
    "carga útil": "payload",
    "asociativo": "associative",
    "asociativa": "associative",
    "asociativos": "associative",
    "asociativas": "associative",
    "anterior": "previous",
    "anteriores": "previous",
    "oculto": "hidden",
    "oculta": "hidden",
    "ocultos": "hidden",
    "ocultas": "hidden",
    # A shell's jobs and a program's features: Apertium's "a work in the background", "the list
    # of active characteristics".
    "trabajo": "job",
    "trabajos": "jobs",
    "característica": "feature",
    "características": "features",
    # Backups, storage and keys (the twenty-fourth round), by the same probe: "respaldo" ->
    # "backrest", "frase de contraseña" -> "sentence of password", "navegar" -> "cruise",
    # "reescribir" -> "redraft", "panel" -> "signpost", "conservar" -> "conserve" ("¿Qué se
    # conserva?" -> "What conserves?"), "en bruto" -> "in the rough"; "podar", "enchufar",
    # "metadatos", "comprobación", "deduplicación", "caducado" left in Spanish. Left out with two
    # senses: "bloquear" (lock or block), "liberar" (free or release), "programar" (schedule or
    # program), "sube" (uploads or rises).
    "respaldo": "backup",
    "respaldos": "backups",
    "respaldar": "back up",
    "metadatos": "metadata",
    "comprobación": "check",
    "comprobaciones": "checks",
    "frase de contraseña": "passphrase",
    "frases de contraseña": "passphrases",
    "frase de paso": "passphrase",
    "deduplicación": "deduplication",
    "panel": "dashboard",
    "paneles": "dashboards",
    "tarea programada": "scheduled task",
    "tareas programadas": "scheduled tasks",
    "programador de tareas": "task scheduler",
    "podar": "prune",
    "podo": "prune",
    "poda": "prunes",
    "podado": "pruned",
    "podados": "pruned",
    "podé": "pruned",
    "navegar": "browse",
    "navego": "browse",
    "navega": "browses",
    "subir": "upload",
    "subo": "upload",
    "enchufar": "plug in",
    "enchufo": "plug in",
    "enchufa": "plugs in",
    "enchufado": "plugged in",
    "reescribir": "rewrite",
    "reescribe": "rewrites",
    "reescriba": "rewrites",
    "espacio liberado": "freed space",
    "liberar espacio": "free space",
    "libera espacio": "frees space",
    "en bruto": "raw",
    "caducado": "expired",
    "caducada": "expired",
    "caducados": "expired",
    "caducadas": "expired",
    "conservar": "keep",
    "conservo": "keep",
    "se conserva": "is kept",
    "se conservan": "get kept",
    "conserva": "keeps",
    "conservan": "keep",
    # and from stdlib-es's renderings, probed the same way: "hoja de cálculo" -> "leaf of
    # calculation", "un valor por defecto" -> "a value default" (the Spanish order kept),
    # "ordenar" -> "order" where a list is sorted
    "hoja de cálculo": "spreadsheet",
    "hojas de cálculo": "spreadsheets",
    "valor por defecto": "default value",
    "valores por defecto": "default values",
    "valor predeterminado": "default value",
    "valores predeterminados": "default values",
    "ordenar": "sort",
    "ordeno": "sort",
    "ordena": "sorts",
    "ordenado": "sorted",
    "ordenada": "sorted",
    "ordenados": "sorted",
    "ordenadas": "sorted",
}


def _doc_terms(shape: str = r".+") -> str:
    """The `DOC_TERMS` of `shape` (a regular expression the whole term matches) as one alternation,
    longest first, so that a phrase wins over its first word ("tiempo de espera" over "tiempo")."""
    return "|".join(re.escape(t) for t in sorted(DOC_TERMS, key=len, reverse=True) if re.fullmatch(shape, t))


_DOC_TERM = re.compile(r"(?<![\w-])(" + _doc_terms() + r")(?![\w-])", re.IGNORECASE)
# A first-person verb of `DOC_TERMS` ("desactivo", "navego") after "cómo", an object pronoun
# between or not (`with_doc_terms`).
_HOW_FIRST_PERSON = re.compile(
    r"(?<![\w-])(c[oó]mo )(?=(?:(?:me|te|se|lo|la|los|las|le|les) )?(?:" + _doc_terms(r"\w+o") + r")(?![\w-]))",
    re.IGNORECASE,
)
# An infinitive of `DOC_TERMS` with an object pronoun joined to it ("teclearla", "cargarlos"):
# Apertium does not know the joined word when it does not know the verb.
_CLITIC_OBJECT = {"lo": "it", "la": "it", "le": "it", "los": "them", "las": "them", "les": "them"}
_DOC_VERB_CLITIC = re.compile(
    r"(?<![\w-])(" + _doc_terms(r"\w+[aei]r") + r")(los|las|les|lo|la|le)(?![\w-])",
    re.IGNORECASE,
)


def _whole_phrases(pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[re.Pattern[str], str], ...]:
    """Each (pattern, replacement) with the pattern matched as whole words, in any case."""
    return tuple((re.compile(rf"(?<![\w-])(?:{pattern})(?![\w-])", re.IGNORECASE), rep) for pattern, rep in pairs)


# Spanish constructions Apertium renders word for word, with what it should read: "La opción hace
# que el servidor guarde..." -> "The option does that the server save...", "en lugar de borrarlo"
# -> "in place to erase it", "no hace nada" -> "does not do at all", "entrar en" -> "go in in",
# "deja de guardar" -> "leaves to save", "de golpe" -> "of swipe", "lleva a cabo" -> "carry".
# Chosen from 63 common constructions, each sent through Apertium in a neutral sentence ("El
# servidor guarda el fichero en lugar de borrarlo.", benchmarks/apertium_probe.py): only those it
# rendered in another sense are here. `SYNONYMS` come first: a Spanish synonym Apertium renders right.
SYNONYMS: tuple[tuple[re.Pattern[str], str], ...] = _whole_phrases(
    (
        (r"en lugar de", "en vez de"),
        # "modo" is "mode" (DOC_TERMS); its phrases are put as their synonyms with "forma"
        (r"de modo que", "de forma que"),
        (r"de este modo", "de esta forma"),
        (r"de ese modo", "de esa forma"),
        (r"del mismo modo", "de la misma forma"),
        (r"de todos modos", "de todas formas"),
        # "evitar" -> "avert": its synonym "impedir" is rendered "prevent"
        (r"evita", "impide"),
        (r"evitan", "impiden"),
        (r"evitar", "impedir"),
        (r"evito", "impido"),
        # "orden" is feminine as a command ("la orden") and masculine as a sequence ("el orden
        # alfabético"); with "con" it is an instrument ("¿Con qué orden veo...?"): a command
        (r"(con qu[eé]) orden", r"\1 comando"),
        (r"(la|una|esta|esa|otra|cualquier|cada) orden", r"\1 comando"),
    )
)
CONSTRUCTIONS: tuple[tuple[re.Pattern[str], str], ...] = _whole_phrases(
    (
        (r"hace que", "makes"),
        (r"hacen que|hacer que|haga que|hagan que", "make"),
        (r"no coincide", "does not match"),
        (r"no coinciden", "do not match"),
        (r"permite que|deja que", "lets"),
        (r"permiten que|permitir que|dejan que|dejar que", "let"),
        (r"deja de", "stops"),
        (r"dejan de|dejar de|dejo de", "stop"),
        # a negation's "nada" -> "at all"
        (r"(no(?: \w+){1,2}) nada", r"\1 anything"),
        (r"entrar en|entran en", "go into"),
        (r"entro en", "I go into"),
        (r"entra en", "goes into"),
        (r"cu[aá]nto(?: tiempo)? tardan?", "how long takes"),
        (r"cu[aá]nto(?: tiempo)? duran?", "how long lasts"),
        (r"cu[aá]nto(?: tiempo)? esperan?", "how long waits"),
        (r"de golpe|de una vez", "in one go"),
        # "enseñar" is "teach" before "a" + a verb, else "show" ("¿Qué comando me enseña...?")
        (r"me enseña(?! a\b)", "shows me"),
        (r"me enseñan(?! a\b)", "show me"),
        (r"enseña(?! a\b)", "shows"),
        (r"enseñan(?! a\b)|enseñar(?! a\b)|enseño(?! a\b)", "show"),
        (r"pone en marcha", "starts"),
        (r"poner en marcha|pongo en marcha|ponen en marcha", "start"),
        (r"lleva a cabo|llevan a cabo|llevar a cabo", "carry out"),
        (r"tiene en cuenta|tienen en cuenta|tener en cuenta|tengo en cuenta", "take into account"),
        (r"da de baja|dar de baja|doy de baja", "remove"),
        (r"da de alta|dar de alta|doy de alta", "add"),
        (r"echar un vistazo a|echo un vistazo a", "look at"),
        # "activo" is a verb after "cómo" ("¿Cómo activo X?" -> "How do I actuate X?"), else
        # the adjective "active"
        (r"c[oó]mo activo", "how do I enable"),
    )
)


# How a Spanish question opens, where Apertium renders it word for word ("¿Cada cuánto se ejecuta
# la tarea?" -> "Each how much executes the task?", "¿Cómo consigo que el servidor use otro puerto?"
# -> "How I achieve that the server use...", "¿Qué pasa si borro...?" -> "What spends if...?"), with
# the English a person would write. Chosen from a list of 56 common question openers, each sent
# through Apertium over a neutral clause ("¿<opener> el servidor / el fichero / la tarea?"): only
# those it rendered in another sense are here. Not written from any question set. The opener is
# put in English and the rest of the question translated alone (`_apertium_rendering`).
QUESTION_FORMS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rf"^\s*¿?\s*(?:{pattern})(?![\w-])\s*", re.IGNORECASE), english)
    for pattern, english in (
        (r"cada cu[aá]nto(?: tiempo)?|con qu[eé] frecuencia", "How often"),
        (r"c[oó]mo (?:hago|consigo|logro)(?: para)? que|c[oó]mo se consigue que", "How do I make"),
        (r"c[oó]mo puedo (?:hacer|conseguir|lograr) que", "How can I make"),
        (r"c[oó]mo (?:hago|se hace) para", "How do I"),
        (r"qu[eé] (?:tengo|hay|debo) que|qu[eé] debo", "What do I have to"),
        (r"qu[eé] (?:pasa|ocurre|sucede) si", "What happens if"),
        (r"qu[eé] hace falta para|qu[eé] necesito para", "What do I need to"),
        (r"hace falta|es necesario", "Do I need to"),
        (r"c[oó]mo s[eé] si", "How do I know if"),
        (r"para qu[eé] sirven?", "What is the use of"),
        (r"qu[eé] diferencia hay entre", "What is the difference between"),
        # fifth round: "cuánto" with a verb of time ("¿Cuánto tarda / dura / espera...?" -> "How
        # much takes / hard / expects"), from the construction probe (`CONSTRUCTIONS`)
        (r"cu[aá]nto(?: tiempo)? tardan?", "How long takes"),
        (r"cu[aá]nto(?: tiempo)? duran?", "How long lasts"),
        (r"cu[aá]nto(?: tiempo)? esperan?", "How long waits"),
    )
)
# Apertium renders "¿Cómo cambio...?" / "¿Dónde pongo...?" without English's do-support: "How I
# change the port?", "Where I put the file?".
_NO_DO = re.compile(r"^(How|Where|When|Why) I (?!(?:am|was|can|could|should|must|will|would|do|did|have to)\b)")
# Apertium upper-cases the first word it knows of a sentence; a clause translated alone goes after
# this word, dropped from its English ("And ...").
_CLAUSE_LEAD = ("Y ", "And ")


def question_form(question: str) -> tuple[str, str] | None:
    """The English of the question's opener (`QUESTION_FORMS`) and the rest of the question, or None."""
    for pattern, english in QUESTION_FORMS:
        match = pattern.match(question)
        if match and question[match.end() :].strip(" ?¿"):
            return english, question[match.end() :]
    return None


def with_do_support(rendered: str) -> str:
    """ "How I change the port?" -> "How do I change the port?" (`_NO_DO`)."""
    return _NO_DO.sub(r"\1 do I ", rendered)


def with_doc_terms(question: str) -> str:
    """`question` with its constructions as Apertium should read them (`SYNONYMS`, `CONSTRUCTIONS`) and its
    documentation words in English (`DOC_TERMS`, an infinitive's joined object pronoun too). A
    verb of `DOC_TERMS` in the first person after "cómo" gets its subject, "yo", so that the
    English keeps "do I" ("¿Cómo desactivo X?" -> "How do I disable X?", not "How disable X?")."""
    for pattern, replacement in (*SYNONYMS, *CONSTRUCTIONS):
        question = pattern.sub(replacement, question)
    question = _HOW_FIRST_PERSON.sub(r"\1yo ", question)
    question = _DOC_VERB_CLITIC.sub(
        lambda m: f"{DOC_TERMS[m.group(1).lower()]} {_CLITIC_OBJECT[m.group(2).lower()]}", question
    )
    return _DOC_TERM.sub(lambda m: DOC_TERMS[m.group(1).lower()], question)


def keep_identifiers(question: str, rendered: str) -> str:
    """`rendered` with the identifiers, flags and numbers of `question` (a word with a digit, inner
    punctuation or a capital past its first letter) that it lost, added at its end: Apertium
    reads the `O` of `-O` as the Spanish "o" and renders it "-Or"."""
    lost = [
        word
        for word in dict.fromkeys(_KEPT_TOKEN.findall(question))
        if _IDENTIFIER_LIKE.search(word) and not re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", rendered)
    ]
    return " ".join([rendered, *lost]) if lost else rendered


def wants_rendering(question: str) -> bool:
    """Whether `question` is searched in English too: it is in Spanish, and rendering is on."""
    from locallens.claims import question_language

    return _enabled() and question_language(question) == "es"


def _enabled() -> bool:
    raw = os.environ.get("LOCALLENS_TRANSLATE", "").strip()
    return env_flag("LOCALLENS_TRANSLATE") if raw else True


@lru_cache(maxsize=1)
def _apertium() -> str | None:
    """The `apertium` command when its Spanish-English pair is installed, else None."""
    command = shutil.which("apertium")
    if command is None:
        return None
    try:
        listed = subprocess.run([command, "-l"], capture_output=True, text=True, timeout=TRANSLATE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return command if APERTIUM_MODE in listed.stdout.split() else None


class Translator:
    """One long-lived Apertium pipeline: each text is written to it ending in a null character and
    its translation read back up to the next one (Apertium's null-flush mode, `-z` on every
    stage). Starting the pipeline reads ~5 MB of transducers (~0.1-0.2 s); after that a question
    costs a few milliseconds, against a new chain of ten processes per question. Thread-safe; a
    failed or slow translation stops the pipeline (the next one starts it again) and returns None."""

    def __init__(self, command: list[str]) -> None:
        self.command = command
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def translate(self, text: str, timeout: float = TRANSLATE_TIMEOUT_S) -> str | None:
        with self._lock:
            try:
                return self._translate(text, timeout)
            except (OSError, ValueError):
                self._stop()
                return None

    def _translate(self, text: str, timeout: float) -> str | None:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
            )
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        # A blank before the null character: the bilingual stage flushes only after one. A null
        # character of the text itself would end it early, its rest answered as the next text.
        escaped = _STREAM_SPECIAL.sub(r"\\\1", " ".join(text.replace("\0", " ").split()))
        escaped = _KEPT_COMMAND.sub(r"[\1]", escaped)
        process.stdin.write(escaped.encode("utf-8") + b"\n\0")
        process.stdin.flush()
        out = bytearray()
        descriptor = process.stdout.fileno()
        while not out.endswith(b"\0"):
            ready, _, _ = select.select([descriptor], [], [], timeout)
            chunk = os.read(descriptor, 65536) if ready else b""
            if not chunk:  # timed out, or the pipeline ended
                self._stop()
                return None
            out += chunk
        translated = _KEPT_BLANK.sub(r"\1", out[:-1].decode("utf-8", "replace"))
        return " ".join(_STREAM_ESCAPED.sub(r"\1", translated).split())

    def _stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def close(self) -> None:
        with self._lock:
            if self._process is not None and self._process.stdin is not None:
                self._process.stdin.close()  # the pipeline ends at the end of its input
                try:
                    self._process.wait(timeout=1.0)
                except subprocess.TimeoutExpired:
                    pass
            self._stop()


def null_flush_pipeline(mode_file: Path) -> list[str] | None:
    """The command of an Apertium mode file (`spa-eng.mode`: its stages joined by pipes) with
    null-flush on every stage and unknown words unmarked (what `apertium -u` passes as `$1`);
    None when the file cannot be read."""
    try:
        text = mode_file.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    stages = []
    for stage in text.split("|"):
        words = shlex.split(stage.replace("$1", "-n").replace("$2", ""))
        if not words:
            return None
        stages.append(shlex.join([words[0], "-z", *words[1:]]))
    return ["bash", "-c", " | ".join(stages)] if stages and shutil.which("bash") else None


def _translator() -> Translator | None:
    """The long-lived pipeline of the installed `apertium`'s Spanish-English mode, or None."""
    command = _apertium()
    return None if command is None else _translator_of(command)


@lru_cache(maxsize=4)
def _translator_of(command: str) -> Translator | None:
    """The long-lived pipeline of `command`'s Spanish-English mode (its mode file beside its
    data: /usr/bin/apertium reads /usr/share/apertium/modes), or None."""
    pipeline = _mode_pipeline(command)
    return None if pipeline is None else _long_lived(pipeline)


def _mode_pipeline(command: str) -> list[str] | None:
    """The command line of `command`'s Spanish-English mode, made to flush at each null, or None."""
    return null_flush_pipeline(Path(command).resolve().parent.parent / "share/apertium/modes" / f"{APERTIUM_MODE}.mode")


def _long_lived(argv: list[str]) -> Translator:
    """A long-lived pipeline running `argv`, closed when the process exits."""
    translator = Translator(argv)
    atexit.register(translator.close)
    return translator


@lru_cache(maxsize=1)
def _executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="locallens-translate")


def _translate_once(command: str, text: str) -> str | None:
    """`apertium -u spa-eng` run once on `text` (when the long-lived pipeline is unavailable)."""
    try:
        done = subprocess.run(
            [command, "-u", APERTIUM_MODE],
            input=text.replace("\n", " "),
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=TRANSLATE_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return " ".join(done.stdout.split()) if done.returncode == 0 else None


# A finite verb of the third person in Apertium's analysis ("pasar<vblex><pri><p3><sg>"), and the
# readings that go on a noun phrase ("función de VCL", "constante integrada").
_FINITE_P3 = re.compile(r"^(?!ser<|estar<|haber<)[^<]+<(?:vblex|vbmod)><(?:pri|pii|ifi|fti|cni)><p3>")
_NOUN_PHRASE = ("<n>", "<np>", "<adj>", "<num>", "<vblex><pp>")
_LEXICAL_UNIT = re.compile(r"\^([^/$]*)/([^$]*)\$")


# The opener `relative_form` rewrites ("¿Qué opción...", "Que variable..."); a question without it
# is not sent to the analyser.
_QUE_OPENER = re.compile(r"^\s*¿?\s*(qu[eé])\s+", re.IGNORECASE)


def relative_form(question: str, analysed: list[tuple[str, list[str]]]) -> str | None:
    """ "¿Qué opción activa el soporte?" as "¿Cuál es la opción que activa el soporte?", or None.

    After "¿Qué <noun>" Apertium's tagger reads an ambiguous verb as an adjective or a noun
    ("activa" -> "Which active option", "pasa" -> "raisin", "vale" -> "voucher", "directiva indica"
    -> "managerial indicates"); in a relative clause it reads it as the verb ("Which is the option
    that actuates the support"). `analysed` is Apertium's morphological analysis of the question:
    each word with its readings ("activar<vblex><pri><p3><sg>", "*Host" for a word it does not
    know). The noun's gender and number give the article; the verb is the first word after the
    noun phrase (adjectives, participles, names, "de" and its noun, at most four words) that can
    be a finite verb of the third person."""
    words = [(surface, readings) for surface, readings in analysed if surface not in ("¿", "¡")]
    if len(words) < 3 or words[0][0].lower() not in ("qué", "que"):
        return None
    noun = next((r for r in words[1][1] if "<n>" in r), None)
    if noun is None:
        return None
    verb = None
    for surface, readings in words[2:6]:
        if any(_FINITE_P3.match(r) for r in readings):
            verb = surface
            break
        if (
            surface.lower() != "de"
            and not any(t in r for r in readings for t in _NOUN_PHRASE)
            and readings != [f"*{surface}"]
        ):
            return None
    opener = _QUE_OPENER.match(question)
    if verb is None or opener is None:
        return None
    noun_at = re.search(rf"(?<!\w){re.escape(words[1][0])}(?!\w)", question[opener.end() :])
    if noun_at is None:
        return None
    after_noun = opener.end() + noun_at.end()
    verb_at = re.search(rf"(?<!\w){re.escape(verb)}(?!\w)", question[after_noun:])
    if verb_at is None:
        return None
    at = after_noun + verb_at.start()
    plural, feminine = "<pl>" in noun, "<f>" in noun
    article = {(False, False): "el", (False, True): "la", (True, False): "los", (True, True): "las"}
    lead = "Cuáles son" if plural else "Cuál es"
    return (
        f"{question[: opener.start(1)]}{lead} {article[plural, feminine]} "
        f"{question[opener.end() : at]}que {question[at:]}"
    )


def _analysis(command: str, question: str) -> list[tuple[str, list[str]]] | None:
    """Apertium's morphological analysis of `question` (the first stage of its Spanish-English
    mode, as its own long-lived pipeline), or None."""
    analyser = _analyser_of(command)
    out = analyser.translate(question) if analyser is not None else None
    if not out:
        return None
    return [(m.group(1), m.group(2).split("/")) for m in _LEXICAL_UNIT.finditer(out)]


@lru_cache(maxsize=4)
def _analyser_of(command: str) -> Translator | None:
    """The first stage of `command`'s Spanish-English mode (its morphological analyser) as a
    long-lived pipeline of its own, or None."""
    pipeline = _mode_pipeline(command)
    return None if pipeline is None else _long_lived(["bash", "-c", pipeline[2].split(" | ")[0]])


def _apertium_rendering(question: str) -> str | None:
    """Apertium's English of `question`, its documentation words first put in English
    (`with_doc_terms`) and the identifiers it lost added back (`keep_identifiers`); None when
    Apertium is not installed or fails."""
    command = _apertium()
    if command is None:
        return None
    form = question_form(question)
    if form is not None:
        rest = _translate(command, _CLAUSE_LEAD[0] + with_doc_terms(form[1]))
        if rest and rest.startswith(_CLAUSE_LEAD[1]):
            return keep_identifiers(question, f"{form[0]} {rest[len(_CLAUSE_LEAD[1]) :]}")
    analysed = _analysis(command, question) if _QUE_OPENER.match(question) else None
    relative = relative_form(question, analysed) if analysed else None
    text = _translate(command, with_doc_terms(relative or question))
    return keep_identifiers(question, with_do_support(text)) if text else None


def _translate(command: str, prepared: str) -> str | None:
    """Apertium's English of `prepared`: through the long-lived pipeline, else one run."""
    translator = _translator()
    text = translator.translate(prepared) if translator is not None else None
    return text or _translate_once(command, prepared)


class PendingRendering:
    """A rendering being made (Apertium translates in a worker thread while the caller embeds the
    question); `result()` waits for it, and falls back to the gloss on any failure."""

    def __init__(self, question: str) -> None:
        self.question = question
        self._future: Future[str | None] | None = None
        if _apertium() is not None:
            self._future = _executor().submit(_apertium_rendering, question)

    def result(self) -> Rendering | None:
        if self._future is not None:
            try:
                text = self._future.result(timeout=2 * TRANSLATE_TIMEOUT_S + 1)
            except Exception:  # any failure of the translator falls back to the gloss
                text = None
            if text:
                return Rendering(_worded(text), "apertium")
        text = gloss(self.question)
        return Rendering(_worded(text), "gloss") if text else None


def start_rendering(question: str) -> PendingRendering | None:
    """The English rendering of a Spanish question, started; for an English question that names
    something in a user's everyday word, its documentation wording (`documentation_wording`);
    None for any other question."""
    if wants_rendering(question):
        return PendingRendering(question)
    wording = documentation_wording(question) if _enabled() else None
    return _Ready(question, Rendering(wording, "wording")) if wording else None


class _Ready(PendingRendering):
    """A rendering of `question` made at once."""

    def __init__(self, question: str, rendering: Rendering) -> None:
        self.question = question
        self._rendering = rendering

    def result(self) -> Rendering | None:
        return self._rendering


# A user's everyday word for what documentation names otherwise, by the word documentation uses
# ("the current folder" is a manual's "the current directory", a "shortcut" its "key binding", a
# "wildcard" its "glob"); whole words, the case kept. An English question holding one is also
# searched and read in documentation's words (its rendering "wording", beside the question as a
# Spanish question's English rendering is), and so is every English rendering.
USER_WORDS: dict[str, str] = {
    "folder": "directory",
    "folders": "directories",
    "subfolder": "subdirectory",
    "subfolders": "subdirectories",
    "shortcut": "key binding",
    "shortcuts": "key bindings",
    "wildcard": "glob",
    "wildcards": "globs",
}
_USER_WORD = re.compile(r"(?<![\w./-])(" + "|".join(USER_WORDS) + r")(?![\w/-]|\.\w)", re.I)


def _worded(text: str) -> str:
    """An English rendering in documentation's words (`documentation_wording`)."""
    return documentation_wording(text) or text


def documentation_wording(question: str) -> str | None:
    """`question` with a user's everyday words put as documentation puts them (`USER_WORDS`), or
    None when it has none."""

    def put(found: re.Match[str]) -> str:
        word = found.group(1)
        english = USER_WORDS[word.lower()]
        return english.capitalize() if word[:1].isupper() else english

    wording = _USER_WORD.sub(put, question)
    return wording if wording != question else None


def render(question: str) -> Rendering | None:
    """The English rendering of a Spanish question, or None (see the module doc)."""
    pending = start_rendering(question)
    return pending.result() if pending else None


def embedded(rendering: Rendering | None, encode_query: Callable[[str], np.ndarray]) -> Rendering | None:
    """`rendering` with its query vector (the search ranks a chunk by its best cosine over the
    question and its rendering)."""
    return None if rendering is None else replace(rendering, vector=encode_query(rendering.text))


def variants(rendering: Rendering | None) -> list[tuple[str, np.ndarray]]:
    """The renderings a search takes besides the question itself (`retrieval.search`'s `also`)."""
    return [(rendering.text, rendering.vector)] if rendering is not None and rendering.vector is not None else []


def gloss(question: str) -> str:
    """A word-by-word English gloss of a Spanish question: each word `unit_scores` bridges to
    English as that word, the words a translation keeps (numbers, identifiers, names; see
    `extractive._untranslated`) as they are, the others left out. "" when no word survives."""
    from locallens.extractive import _untranslated
    from locallens.unit_scores import bridged_word

    words = _TOKEN.findall(question)
    first = words[0] if words else ""
    out = []
    for word in words:
        english = bridged_word(word)
        if english is not None:
            out.append(english)
        elif _untranslated(word, first):
            out.append(word)
    return " ".join(dict.fromkeys(out))
