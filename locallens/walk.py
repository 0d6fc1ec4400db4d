"""Walk a root into candidate files: ignore rules, `.gitignore`, hidden paths, symlinks.

`walk(root)` yields a `FileStat` for every candidate file, or a `Skipped` for a file or folder it
had to leave out for a reason the user should hear about (permission denied, broken symlink,
symlink out of the root or into a loop, a second path to a file already found). Pure policy
(hidden files, `.git`, `.gitignore`d paths, files that are not documents) is silent; the files
that are not documents are only counted by extension (`others`), so that a summary can say how
many a folder holds and of which kinds. The indexer decides from (size, mtime_ns) alone whether a
file needs reading; reading is `locallens.readers`.

Symlinks:
- One file is one document however it is reached. The walk visits names sorted within each
  folder, depth first (paths compared folder by folder), and the first path that reaches a file
  (by its `(st_dev, st_ino)`: a symlink, a hard link, a bind mount) or a folder is the one
  indexed; every later path to the same file or folder is a `Skipped` with `same_as` naming the
  first ("same file as PATH" / "same folder as PATH"), and is never read.
- A symlink whose target (fully resolved) is outside the root is skipped, never followed:
  indexing a folder never reads what lies outside it.
- A link back to a folder being walked (`up -> ..`) and a chain the kernel cannot resolve
  (`a -> b -> a`, ELOOP) are skipped as `symlink loop`: the walk always ends.

A bad file is a `Skipped`, never an exception, and the run goes on. The only raise is a
`UsageError` for a root that does not exist or a glob that does not compile.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from locallens.domain import REASON_DISAPPEARED, REASON_NOT_REGULAR, REASON_PERMISSION, FileStat, Skipped
from locallens.errors import UsageError
from locallens.readers.registry import extensions

# Reasons, spelled once so the walker, the reader and the tests agree (the ones the readers
# share live in `domain`, imported above so `walk.REASON_*` names them all).
REASON_BROKEN_SYMLINK = "broken symlink"
REASON_SYMLINK_OUTSIDE = "symlink points outside the indexed root"
REASON_SYMLINK_LOOP = "symlink loop"
REASON_SAME_FILE = "same file as"  # followed by the path indexed: "same file as v2/a.md"
REASON_SAME_FOLDER = "same folder as"  # followed by the path walked: "same folder as current"
REASON_BAD_NAME = "file name is not valid UTF-8"


def _compile_globs(patterns: Sequence[str], flag: str) -> pathspec.GitIgnoreSpec | None:
    """`--include`/`--exclude` globs as one gitwildmatch spec; a bad glob is the user's to fix."""
    cleaned = [p for p in patterns if p.strip()]
    if not cleaned:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(cleaned)
    except ValueError as exc:  # GitIgnorePatternError is a ValueError
        raise UsageError(f"invalid {flag} glob: {exc}") from exc


def _compile_gitignore(text: str) -> pathspec.GitIgnoreSpec | None:
    """A `.gitignore` file's spec. Git itself ignores a line it cannot parse, and so do we."""
    lines = text.splitlines()
    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:
        # One bad line must not throw away the good ones: compile line by line, keep the valid.
        valid: list[str] = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except ValueError:
                continue
            valid.append(line)
        spec = pathspec.GitIgnoreSpec.from_lines(valid)
    return spec if len(spec.patterns) else None


@dataclass(frozen=True, slots=True)
class _IgnoreRule:
    """One `.gitignore`: its patterns apply to paths relative to the folder that holds it."""

    prefix: str  # folder of the .gitignore relative to the root, "" or ending in "/"
    spec: pathspec.GitIgnoreSpec


def _is_gitignored(rules: Sequence[_IgnoreRule], rel: str, is_dir: bool) -> bool:
    """Git's precedence: the deepest `.gitignore` with a matching pattern decides.

    Within one file the last matching pattern wins (a `!negation` re-includes); `check_file`
    gives that. Across files, a deeper file overrides a shallower one, so walk from the root
    down and let the last definite answer stand. Directories are matched as "name/" so that
    patterns with a trailing slash (`build/`) apply to them.
    """
    ignored = False
    for rule in rules:
        sub = rel[len(rule.prefix) :]
        if is_dir:
            sub += "/"
        result = rule.spec.check_file(sub).include
        if result is not None:
            ignored = result
    return ignored


@dataclass(slots=True)
class _Frame:
    """One folder being walked: its sorted entries and what applies beneath it."""

    entries: list[os.DirEntry[str]]
    rel_prefix: str  # "" for the root, else "sub/dir/"
    rules: tuple[_IgnoreRule, ...]
    key: tuple[int, int]  # (st_dev, st_ino) of the folder, for loop detection
    pos: int = 0


@dataclass(slots=True)
class _Walker:
    root: str  # resolved absolute root
    include: pathspec.GitIgnoreSpec | None
    exclude: pathspec.GitIgnoreSpec | None
    ancestors: set[tuple[int, int]] = field(default_factory=set)  # folders on the current path
    visited: dict[tuple[int, int], str] = field(default_factory=dict)  # every folder walked: its first path
    files: dict[tuple[int, int], str] = field(default_factory=dict)  # every file found: its first path
    # Regular files that are not documents (neither a known extension nor `--include`d, not
    # `--exclude`d, ignored or hidden), by lower-case extension ("" for none): when given.
    others: Counter[str] | None = None

    def is_candidate(self, rel: str, name: str) -> bool:
        """A document by extension (case-insensitive) or by `--include`, and not `--exclude`d."""
        wanted = os.path.splitext(name)[1].lower() in extensions() or (
            self.include is not None and self.include.match_file(rel)
        )
        return wanted and not (self.exclude is not None and self.exclude.match_file(rel))

    def count_other(self, rel: str, name: str) -> None:
        """Count a regular file that is not a document, unless `--exclude` names it."""
        if self.others is not None and not (self.exclude is not None and self.exclude.match_file(rel)):
            self.others[os.path.splitext(name)[1].lower()] += 1

    def is_inside_root(self, real: str) -> bool:
        if real == self.root:
            return True
        prefix = self.root if self.root.endswith(os.sep) else self.root + os.sep
        return real.startswith(prefix)

    def open_folder(
        self, path: str, rel_prefix: str, rules: tuple[_IgnoreRule, ...], key: tuple[int, int]
    ) -> _Frame | Skipped:
        """List a folder (sorted by name) and pick up its `.gitignore`."""
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except PermissionError:
            return Skipped(rel_prefix.rstrip("/") or ".", REASON_PERMISSION, error=True)
        except FileNotFoundError:
            # Deleted between being listed in its parent and being opened.
            return Skipped(rel_prefix.rstrip("/") or ".", "folder disappeared", error=False)
        except OSError as exc:
            return Skipped(rel_prefix.rstrip("/") or ".", f"cannot list folder: {_oserror_text(exc)}", error=True)
        for entry in entries:
            if entry.name == ".gitignore":
                spec = _read_gitignore(entry.path)
                if spec is not None:
                    rules = (*rules, _IgnoreRule(rel_prefix, spec))
                break
        return _Frame(entries=entries, rel_prefix=rel_prefix, rules=rules, key=key)

    def walk(self) -> Iterator[FileStat | Skipped]:
        try:
            root_st = os.stat(self.root)
        except PermissionError:
            yield Skipped(".", REASON_PERMISSION, error=True)
            return
        except OSError as exc:
            yield Skipped(".", f"cannot list folder: {_oserror_text(exc)}", error=True)
            return
        root_key = (root_st.st_dev, root_st.st_ino)
        first = self.open_folder(self.root, "", (), root_key)
        if isinstance(first, Skipped):
            yield first
            return
        # Depth-first with an explicit stack: no recursion limit on deep trees, and the order is
        # "sorted by name within each folder", files and sub-folders interleaved.
        stack: list[_Frame] = [first]
        self.ancestors.add(root_key)
        self.visited[root_key] = "."
        while stack:
            frame = stack[-1]
            if frame.pos >= len(frame.entries):
                stack.pop()
                self.ancestors.discard(frame.key)
                continue
            entry = frame.entries[frame.pos]
            frame.pos += 1
            yield from self.visit(entry, frame, stack)

    def visit(self, entry: os.DirEntry[str], frame: _Frame, stack: list[_Frame]) -> Iterator[FileStat | Skipped]:
        name = entry.name
        # Hidden files and folders (".git", ".venv", ".gitignore" itself, ...): silent policy.
        if name.startswith("."):
            return
        rel = frame.rel_prefix + name
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            # A name that is not UTF-8 (surrogate-escaped by Python) cannot be stored or cited.
            shown = os.fsencode(rel).decode("utf-8", "replace")
            yield Skipped(shown, REASON_BAD_NAME, error=False)
            return

        try:
            is_link = entry.is_symlink()
        except OSError:
            is_link = False

        if not is_link:
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                yield Skipped(rel, REASON_DISAPPEARED, error=False)
                return
            except PermissionError:
                yield Skipped(rel, REASON_PERMISSION, error=True)
                return
            except OSError as exc:
                yield Skipped(rel, f"cannot stat: {_oserror_text(exc)}", error=True)
                return
            if stat_mod.S_ISDIR(st.st_mode):
                yield from self.enter_folder(entry.path, rel, frame, stack, (st.st_dev, st.st_ino))
            elif stat_mod.S_ISREG(st.st_mode):
                if not _is_gitignored(frame.rules, rel, False):
                    if self.is_candidate(rel, name):
                        yield self.file_stat(rel, st)
                    else:
                        self.count_other(rel, name)
            elif not _is_gitignored(frame.rules, rel, False) and self.is_candidate(rel, name):
                # A FIFO, socket or device named like a document: reading it could block forever.
                yield Skipped(rel, REASON_NOT_REGULAR, error=False)
            return

        # A symlink: stat its target (this follows the whole chain).
        try:
            st = os.stat(entry.path)
        except FileNotFoundError:
            # Broken: we cannot tell file from folder, so judge it by its own name. A dangling
            # link named like a document is worth a line; one named `cache` is not.
            if not _is_gitignored(frame.rules, rel, False) and self.is_candidate(rel, name):
                yield Skipped(rel, REASON_BROKEN_SYMLINK, error=False)
            return
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                # a -> b -> a: the kernel gives up resolving it.
                if not _is_gitignored(frame.rules, rel, False):
                    yield Skipped(rel, REASON_SYMLINK_LOOP, error=False)
            elif isinstance(exc, PermissionError):
                yield Skipped(rel, REASON_PERMISSION, error=True)
            else:
                yield Skipped(rel, f"cannot stat: {_oserror_text(exc)}", error=True)
            return

        is_dir = stat_mod.S_ISDIR(st.st_mode)
        if _is_gitignored(frame.rules, rel, is_dir):
            return
        if not is_dir and not self.is_candidate(rel, name):
            return  # not a document: out of scope whatever it points at
        if is_dir and self.exclude is not None and self.exclude.match_file(rel + "/"):
            return
        real = os.path.realpath(entry.path)
        if not self.is_inside_root(real):
            yield Skipped(rel, REASON_SYMLINK_OUTSIDE, error=False)
            return
        if is_dir:
            yield from self.enter_folder(entry.path, rel, frame, stack, (st.st_dev, st.st_ino))
        elif stat_mod.S_ISREG(st.st_mode):
            # A link to a file inside the root: indexed under the link's own path, unless the file
            # was already found by a path earlier in the walk (then this one is the duplicate).
            yield self.file_stat(rel, st)
        else:
            yield Skipped(rel, REASON_NOT_REGULAR, error=False)

    def enter_folder(
        self,
        path: str,
        rel: str,
        frame: _Frame,
        stack: list[_Frame],
        key: tuple[int, int],
    ) -> Iterator[Skipped]:
        if _is_gitignored(frame.rules, rel, True):
            return
        # `--exclude drafts/` (or `drafts/**`) prunes the whole folder without listing it.
        if self.exclude is not None and self.exclude.match_file(rel + "/"):
            return
        if key in self.ancestors:
            # A link back to a folder we are inside of: following it would never end.
            yield Skipped(rel, REASON_SYMLINK_LOOP, error=False)
            return
        first = self.visited.get(key)
        if first is not None:
            # A second way into a folder already walked (a symlink to it, or the folder itself
            # after a symlink to it came first): walking it again would only duplicate.
            yield Skipped(rel, f"{REASON_SAME_FOLDER} {first}", error=False, same_as=first)
            return
        opened = self.open_folder(path, rel + "/", frame.rules, key)
        if isinstance(opened, Skipped):
            yield opened
            return
        self.ancestors.add(key)
        self.visited[key] = rel
        stack.append(opened)

    def file_stat(self, rel: str, st: os.stat_result) -> FileStat | Skipped:
        """The file at `rel`, or a `Skipped` naming the path that reached the same file first."""
        key = (st.st_dev, st.st_ino)
        first = self.files.get(key)
        if first is not None:
            return Skipped(rel, f"{REASON_SAME_FILE} {first}", error=False, same_as=first)
        self.files[key] = rel
        return FileStat(
            root=self.root,
            relative_path=rel,
            path=os.path.join(self.root, *rel.split("/")),
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
            dev=st.st_dev,
            ino=st.st_ino,
        )


def _read_gitignore(path: str) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(1024 * 1024)  # a sane bound: no real .gitignore is bigger
    except OSError:
        return None  # unreadable or not a file: no rules from it
    # Git reads .gitignore as bytes; a stray non-UTF-8 byte must not cost the other lines.
    return _compile_gitignore(raw.decode("utf-8", "replace"))


def _oserror_text(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__


def walk(
    root: Path,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    others: Counter[str] | None = None,
) -> Iterator[FileStat | Skipped]:
    """Every candidate file under `root`, in a deterministic order, or a `Skipped` saying why not.
    `others`, when given, counts the regular files of a folder that are not documents by extension
    (`_Walker.others`).

    Raises `UsageError` at once (not on first iteration) if `root` does not exist or a glob is bad.
    """
    root_path = Path(root).expanduser()
    if not os.path.exists(root_path):
        raise UsageError(f"no such file or directory: {root}")
    include_spec = _compile_globs(include, "--include")
    exclude_spec = _compile_globs(exclude, "--exclude")

    resolved = root_path.resolve()
    if not resolved.is_dir():
        return _walk_single_file(root_path)
    walker = _Walker(root=str(resolved), include=include_spec, exclude=exclude_spec, others=others)
    return walker.walk()


def _walk_single_file(path: Path) -> Iterator[FileStat | Skipped]:
    """`locallens index notes.md`: the user named the file, so no extension or ignore policy."""
    absolute = Path(os.path.abspath(path))
    parent = absolute.parent.resolve()
    name = absolute.name
    full = os.path.join(parent, name)
    try:
        st = os.stat(full)
    except FileNotFoundError:
        yield Skipped(name, REASON_DISAPPEARED, error=False)
        return
    except PermissionError:
        yield Skipped(name, REASON_PERMISSION, error=True)
        return
    except OSError as exc:
        yield Skipped(name, f"cannot stat: {_oserror_text(exc)}", error=True)
        return
    if not stat_mod.S_ISREG(st.st_mode):
        yield Skipped(name, REASON_NOT_REGULAR, error=False)
        return
    yield FileStat(
        root=str(parent),
        relative_path=name,
        path=full,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        dev=st.st_dev,
        ino=st.st_ino,
    )
