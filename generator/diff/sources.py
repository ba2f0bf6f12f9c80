"""Where the two sides of a diff come from: a results directory, or `git:REF` (the results as committed at REF).

A `git:REF` source is materialized into a temporary folder from git's objects (`git ls-tree`, `git cat-file`), so
the working tree, the index and the current branch are never touched, and a result committed at REF is read with
exactly the same code as a folder on disk. The results path inside the repository is the `--results` folder
(default `<project root>/results`), taken relative to the git top level that holds it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from generator.errors import PerfsiteError, ResultsError
from generator.results.location import refuse_url

GIT_PREFIX = "git:"
GIT_TIMEOUT_S = 120


class SourceError(PerfsiteError):
    """A baseline or candidate cannot be found or read."""


@dataclass(frozen=True)
class ResultsSource:
    """One side of a diff: its label as the user wrote it, the folder to read, and the commit when from git."""

    label: str
    path: Path
    commit: str | None = None
    committed_at: str | None = None  # ISO 8601 commit date, for git sources

    @property
    def short(self) -> str:
        """How the side is named in summaries: `git:main (1a2b3c4d5e6f)` or the folder as given."""
        return f"{self.label} ({self.commit[:12]})" if self.commit else self.label


def is_git_source(text: str) -> bool:
    return text.startswith(GIT_PREFIX)


@contextmanager
def open_source(text: str, results: Path) -> Iterator[ResultsSource]:
    """The results a BASELINE or CANDIDATE argument names, as a readable folder for the `with` block.

    `text` is a folder, or `git:REF` for the folder `results` as committed at REF (materialized in a
    temporary folder removed on exit)."""
    if not text.strip():  # an unset variable (`perfsite diff "$BASE" results`): Path would read it as "."
        raise SourceError(f"A side of the diff is empty ({text!r}): it names no results. Give a folder written by "
                          "`perfsite run --results DIR`, or `git:REF` for the results committed at a git revision "
                          "(e.g. git:main).")
    if not is_git_source(text):
        refuse_url(text, "A side of `perfsite diff` (and `build --baseline`)")
        path = Path(text)
        if not os.path.isdir(path):
            raise SourceError(
                f"The results directory {path} {_missing(path)}. Give a folder written by `perfsite run "
                "--results DIR`, or `git:REF` for the results committed at a git revision (e.g. git:main)."
            )
        yield ResultsSource(label=text, path=path)
        return
    ref = text[len(GIT_PREFIX):]
    repo, rel = git_location(results)
    commit = resolve_commit(repo, ref)
    with tempfile.TemporaryDirectory(prefix="perfsite-diff-") as tmp:
        folder = materialize(repo, commit, rel, Path(tmp), ref)
        yield ResultsSource(label=text, path=folder, commit=commit, committed_at=commit_date(repo, commit))


def git_location(results: Path, purpose: str = "`git:REF` reads the results folder {path} as committed at REF",
                 fix: str = "Run perfsite diff from the repository, point --results at its results folder, or "
                 "compare two results folders instead.") -> tuple[Path, str]:
    """(git top level, results path relative to it, posix) for a results folder that may not exist.
    `purpose` and `fix` word the error for the command that asked."""
    real = Path(results).expanduser().resolve()
    start = next((p for p in (real, *real.parents) if p.is_dir()), Path("/"))
    done = _git(start, "rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0:
        raise SourceError(f"{purpose.format(path=real)}, but {start} is not inside a git repository. {fix}")
    top = Path(done.stdout.strip()).resolve()
    rel = real.relative_to(top).as_posix() if real != top else "."
    return top, rel


def resolve_commit(repo: Path, ref: str) -> str:
    """The full commit id `ref` names in `repo`; SourceError when it names none."""
    done = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", check=False)
    if not ref or done.returncode != 0:
        raise SourceError(
            f"git:{ref} names no commit in the repository {repo}. Use a branch, tag or commit id that "
            "`git rev-parse` knows there (e.g. git:main, git:HEAD~1, git:origin/main after `git fetch`)."
            + (f" {SHALLOW_HINT}" if is_shallow(repo) else "")
        )
    return done.stdout.strip()


# Said wherever history matters in a shallow clone: `actions/checkout` fetches one commit unless told otherwise.
SHALLOW_HINT = ("This clone is shallow (`git clone --depth N`, what actions/checkout makes unless given "
                "`fetch-depth: 0`): its history stops after the commits it fetched. Fetch the rest with "
                "`git fetch --unshallow`, or check out with `fetch-depth: 0`.")


def is_shallow(repo: Path) -> bool:
    """The repository's history was cut by a shallow clone or fetch."""
    return _git(repo, "rev-parse", "--is-shallow-repository", check=False).stdout.strip() == "true"


def commit_date(repo: Path, commit: str) -> str:
    return _git(repo, "show", "-s", "--format=%cI", commit).stdout.strip()


def materialize(repo: Path, commit: str, rel: str, into: Path, ref: str) -> Path:
    """Extract `rel` as committed at `commit` under `into`; returns the extracted results folder.

    The files are read as git stores them (`git ls-tree`, then `git cat-file --batch`), not through `git
    archive`, which leaves out every path a `.gitattributes` marks `export-ignore` (a project that keeps its
    results out of release tarballs got an empty archive and a tarfile error)."""
    listed = _git(repo, "ls-tree", "-r", "-z", "--full-tree", commit, "--", rel).stdout
    entries = [_tree_entry(line) for line in listed.split("\0") if line]
    if not entries:
        raise SourceError(
            f"The results folder `{rel}` does not exist at git:{ref} ({commit[:12]}) in {repo}: nothing was "
            "committed there at that revision. Commit the results of `perfsite run` first, check the "
            "revision, or point --results at the folder where the results are committed."
        )
    for mode, kind, _, path in entries:
        if kind != "blob" or mode == "120000":  # a link, or a submodule: not a file of results
            raise SourceError(
                f"`{path}` at git:{ref} ({commit[:12]}) in {repo} cannot be read as results: it is "
                f"{'a symbolic link' if mode == '120000' else 'a ' + kind} in git. perfsite reads committed "
                "results as plain files; a link out of the results folder (or an absolute one) is refused. Commit "
                "the files themselves, or choose another revision."
            )
    root = into.resolve()
    for (_, _, _, path), data in zip(entries, _blobs(repo, [sha for _, _, sha, _ in entries]), strict=True):
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            raise SourceError(f"`{path}` at git:{ref} ({commit[:12]}) in {repo} lies outside the results folder.")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return into / rel


def _tree_entry(line: str) -> tuple[str, str, str, str]:
    """`git ls-tree` output: mode, kind, object id, path."""
    meta, path = line.split("\t", 1)
    mode, kind, sha = meta.split()
    return mode, kind, sha, path


def _blobs(repo: Path, shas: list[str]) -> list[bytes]:
    """The contents of git objects `shas`, read in one `git cat-file --batch`."""
    done = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch"],
                          input="".join(f"{s}\n" for s in shas).encode(), capture_output=True, timeout=GIT_TIMEOUT_S)
    if done.returncode != 0:
        raise SourceError(f"`git cat-file --batch` failed in {repo}: {done.stderr.decode().strip()}")
    out, at, blobs = done.stdout, 0, []
    for sha in shas:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        if len(header) != 3 or header[0].decode() != sha:
            raise SourceError(f"git object {sha} could not be read in {repo}: {out[at:end].decode(errors='replace')}")
        size = int(header[2])
        blobs.append(out[end + 1:end + 1 + size])
        at = end + 1 + size + 1  # the content, then a newline
    return blobs


@dataclass(frozen=True)
class Commit:
    commit: str
    committed_at: str  # ISO 8601
    subject: str


def commits_changing(repo: Path, rel: str, limit: int) -> list[Commit]:
    """The last `limit` commits that changed `rel`, oldest first (first-parent history of HEAD); none in a
    repository without a commit yet (`git log` fails there: "does not have any commits yet")."""
    if _git(repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode != 0:
        return []
    done = _git(repo, "log", "--first-parent", f"-n{limit}", "--format=%H%x1f%cI%x1f%s", "--", rel)
    rows = [line.split("\x1f", 2) for line in done.stdout.splitlines() if line.strip()]
    return [Commit(*row) for row in reversed(rows) if len(row) == 3]


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        # Literal pathspecs: a results folder named `results*` or `r[12]` is one folder, not a pattern that also
        # takes the commits of every folder it matches.
        done = subprocess.run(["git", "--literal-pathspecs", "-C", str(cwd), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S)
    except FileNotFoundError as e:
        raise SourceError("`git:REF` needs the git command, which is not installed or not on PATH.") from e
    if check and done.returncode != 0:
        raise SourceError(f"`git {' '.join(args)}` failed in {cwd}: {done.stderr.strip()}")
    return done


def load_side(source: ResultsSource) -> list:
    """Every experiment with finished trials under the source's folder (a results root or one experiment)."""
    from generator.results.store import ResultsDir, find_experiments, load_experiment

    folders = [p for p in find_experiments(source.path) if ResultsDir(p).stored_trial_keys()]
    if not folders:
        raise SourceError(
            f"{source.short} holds no finished trial (looked in {source.path}). Run `perfsite run SPEC "
            "--results DIR` for it first, or check the path."
        )
    if source.commit is None:
        return [load_experiment(p) for p in folders]
    try:
        return [load_experiment(p) for p in folders]
    except ResultsError as e:
        # The advice for a working folder (delete the trial, run again) cannot apply to a commit's history.
        raise ResultsError(
            f"The results committed at {source.label} ({source.commit[:12]}) cannot be read: {e} That file is in "
            "the commit's history, so it stays as it is: compare with another revision, or commit repaired "
            "results and compare with that commit."
        ) from e


def _missing(path: Path) -> str:
    """What is wrong with a path that is not a folder: a file is named as one, not as missing."""
    return "is a file, not a folder" if os.path.lexists(path) else "does not exist"
