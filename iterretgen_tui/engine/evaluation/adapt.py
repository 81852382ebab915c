"""Generation-augmented retrieval adaptation (Shao et al., 2023, section 3.4).

A teacher that sees the first draft scores candidate passages for ``y1 || q``; a copy of
the query encoder, which sees only q, is trained so that its softmax over the same
candidates matches the teacher's (KL divergence, both at temperature tau). The passage
side is frozen: candidate vectors are read from the index, so nothing is re-embedded and
the index stays valid for the adapted encoder.

The default teacher is the bi-encoder itself scoring ``y1 || q`` (the paper's insight is
that the draft-informed query is the better relevance model); a sentence-transformers
cross-encoder can be given by path instead.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from ..cores import half_the_cores
from ..embedding.embedder import Embedder
from ..indexing.index import PassageIndex
from ..loop.queries import form_query
from ..passages import Passage

MANIFEST = "adapted.json"  # written last: a folder without it is an unfinished run
MASKED = -1e4  # the padding score: exp(MASKED / tau) is 0 at any tau we use


@dataclass(frozen=True)
class Example:
    question: str
    draft: str  # y1, the first iteration's full output


@dataclass(frozen=True)
class Candidates:
    """One question's candidates: passages, their stored vectors and the teacher's scores."""

    question: str
    passages: tuple[Passage, ...]
    vectors: np.ndarray  # (n, dim), from the index
    teacher: np.ndarray  # (n,)


class Teacher(Protocol):
    name: str

    def score(
        self, queries: Sequence[str], passages: Sequence[Sequence[Passage]], vectors: Sequence[np.ndarray]
    ) -> list[np.ndarray]: ...


class BiEncoderTeacher:
    """The retriever's own encoder on ``y1 || q``: scores are the ones retrieval would use."""

    name = "bi-encoder"

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def score(self, queries, passages, vectors) -> list[np.ndarray]:
        encoded = self.embedder.embed_queries(list(queries))
        return [v @ q for q, v in zip(encoded, vectors)]


class CrossEncoderTeacher:
    """A sentence-transformers CrossEncoder from a local folder (a re-ranker like TART)."""

    def __init__(self, path: str | Path, *, device: str = "cpu", batch_size: int = 32) -> None:
        from sentence_transformers import CrossEncoder

        self.path = Path(path)
        if not self.path.is_dir():
            raise FileNotFoundError(f"cross-encoder folder not found: {self.path}")
        self.name = f"cross-encoder:{self.path}"
        self.batch_size = batch_size
        self._model = CrossEncoder(str(self.path), device=device, local_files_only=True)

    def score(self, queries, passages, vectors) -> list[np.ndarray]:
        pairs = [(q, f"{p.title}\n{p.text}") for q, ps in zip(queries, passages) for p in ps]
        flat = np.asarray(
            self._model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False), dtype=np.float32
        ).reshape(-1)
        bounds = np.cumsum([0, *(len(ps) for ps in passages)])
        return [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def drafts_from_records(path: Path) -> tuple[str, dict[str, Example]]:
    """An `eval` records file (JSONL, a config line first): the dataset directory it ran
    on, and each question's first-iteration draft by question id."""
    lines = Path(path).read_text("utf-8").splitlines()
    directory = json.loads(lines[0]).get("config", {}).get("directory", "") if lines else ""
    drafts = {}
    for line in lines[1:]:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # the line being written when the run was killed
        first = next((step for step in record["iterations"] if step["t"] == 1), None)
        if first is not None:
            drafts[record["id"]] = Example(record["question"], first["draft"])
    return directory, drafts


def gather(
    examples: Sequence[Example], embedder: Embedder, index: PassageIndex, teacher: Teacher, *, n: int = 20
) -> list[Candidates]:
    """Candidates per question: the top-n for ``y1 || q`` and the top-n for q, deduplicated,
    so the student sees both what the draft finds and what it would find alone."""
    if not examples:
        return []
    augmented = [form_query(e.question, e.draft) for e in examples]
    by_draft = index.search(embedder.embed_queries(augmented), n)
    by_question = index.search(embedder.embed_queries([e.question for e in examples]), n)
    passages = []
    for drafted, plain in zip(by_draft, by_question):
        unique = {p.id: p for p in [*drafted, *plain]}
        passages.append(tuple(unique.values()))
    vectors = [index.vectors([p.id for p in ps]) for ps in passages]
    scores = teacher.score(augmented, passages, vectors)
    return [
        Candidates(e.question, ps, v, np.asarray(s, dtype=np.float32))
        for e, ps, v, s in zip(examples, passages, vectors, scores)
        if ps
    ]


def kl_loss(student, teacher, mask, tau: float):
    """Mean over the batch of KL(softmax(teacher / tau) || softmax(student / tau)),
    over each row's real candidates (``mask``); rows are padded to one width."""
    import torch

    log_t = torch.log_softmax(teacher.masked_fill(~mask, MASKED) / tau, dim=-1)
    log_s = torch.log_softmax(student.masked_fill(~mask, MASKED) / tau, dim=-1)
    terms = torch.where(mask, log_t.exp() * (log_t - log_s), torch.zeros_like(log_t))
    return terms.sum(dim=-1).mean()


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 300
    batch_size: int = 16
    lr: float = 2e-5
    tau: float = 0.05  # cosine scores differ by tenths: a low temperature makes them a ranking
    seed: int = 0
    threads: int | None = None  # CPU threads; None: half the cores (all of them collapse
    # when other programs use the cores too)


def _padded(candidates: Sequence[Candidates]):
    import torch

    width = max(len(c.passages) for c in candidates)
    dim = candidates[0].vectors.shape[1]
    vectors = np.zeros((len(candidates), width, dim), dtype=np.float32)
    teacher = np.zeros((len(candidates), width), dtype=np.float32)
    mask = np.zeros((len(candidates), width), dtype=bool)
    for row, c in enumerate(candidates):
        vectors[row, : len(c.passages)] = c.vectors
        teacher[row, : len(c.passages)] = c.teacher
        mask[row, : len(c.passages)] = True
    return torch.from_numpy(vectors), torch.from_numpy(teacher), torch.from_numpy(mask)


def _batches(count: int, size: int, rng: np.random.Generator) -> Iterable[np.ndarray]:
    """Shuffled epochs, cut into batches, forever."""
    while True:
        order = rng.permutation(count)
        for start in range(0, count, size):
            yield order[start : start + size]


def distill(
    model,
    candidates: Sequence[Candidates],
    config: TrainConfig,
    *,
    normalize: bool,
    on_step: Callable[[int, float], None] = lambda step, loss: None,
) -> list[float]:
    """Train ``model`` (a SentenceTransformer, the student) in place; returns the loss per step."""
    import torch
    from sentence_transformers.util import batch_to_device

    if not candidates:
        raise ValueError("no training questions with candidates")
    torch.manual_seed(config.seed)
    vectors, teacher, mask = _padded(candidates)
    device = model.device
    vectors, teacher, mask = vectors.to(device), teacher.to(device), mask.to(device)
    questions = [c.question for c in candidates]
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr)
    batches = _batches(len(candidates), config.batch_size, np.random.default_rng(config.seed))
    prepare = getattr(model, "preprocess", None) or model.tokenize  # renamed in sentence-transformers 6
    losses = []
    threads = torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(config.threads or half_the_cores())
    model.train()
    try:
        for step in range(1, config.steps + 1):
            rows = torch.from_numpy(next(batches)).to(device)
            texts = [questions[i] for i in rows.tolist()]
            features = batch_to_device(prepare(texts), device)
            encoded = model(features)["sentence_embedding"]
            if normalize:
                encoded = torch.nn.functional.normalize(encoded, dim=-1)
            student = torch.einsum("bd,bnd->bn", encoded, vectors[rows])
            loss = kl_loss(student, teacher[rows], mask[rows], config.tau)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            on_step(step, losses[-1])
    finally:
        model.eval()
        torch.set_num_threads(threads)
    return losses


@dataclass(frozen=True)
class Manifest:
    """What an adapted query encoder was made from; `models` and the manifest check read it."""

    name: str
    base: str  # the query encoder it started from (name or path, as configured)
    embedder: str  # the passage embedder whose index it was trained against
    sources: list[str]  # datasets, draft records, folders
    questions: int
    steps: int
    batch_size: int
    lr: float
    tau: float
    teacher: str
    candidates: int  # n per query (top-n for y1 || q, plus the top-n for q)
    final_loss: float  # mean of the last tenth of the steps (one batch is noisy)
    initial_loss: float
    seconds: float
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))

    def save(self, folder: Path) -> Path:
        path = Path(folder) / MANIFEST
        path.write_text(json.dumps(asdict(self), indent=2) + "\n", "utf-8")
        return path

    @classmethod
    def load(cls, folder: Path) -> Manifest:
        return cls(**json.loads((Path(folder) / MANIFEST).read_text("utf-8")))


def summary_loss(losses: Sequence[float]) -> tuple[float, float]:
    """(initial, final): each the mean of a tenth of the steps at that end."""
    span = max(1, len(losses) // 10)
    return float(np.mean(losses[:span])), float(np.mean(losses[-span:]))


def save_adapted(model, folder: Path, manifest: Manifest, losses: Sequence[float]) -> Path:
    """The sentence-transformers folder, the loss log and curve, and the manifest last,
    written beside and renamed into place, so a crash never leaves a half model in use."""
    import shutil

    folder = Path(folder)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save(str(tmp))
    (tmp / "loss.tsv").write_text(
        "step\tloss\n" + "".join(f"{i}\t{loss:.6f}\n" for i, loss in enumerate(losses, 1)), "utf-8"
    )
    plot_losses(losses, tmp / "loss.png", title=f"{manifest.name}: KL(teacher || student)")
    manifest.save(tmp)
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return folder


def plot_losses(losses: Sequence[float], path: Path, *, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a terminal machine
    import matplotlib.pyplot as plt

    steps = np.arange(1, len(losses) + 1)
    window = len(losses) // 20  # one batch is noisy: show a running mean too
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(steps, losses, alpha=0.35 if window > 1 else 1.0, label="per step")
    if window > 1:
        smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
        ax.plot(steps[window - 1 :], smooth, label=f"mean of {window} steps")
    ax.set_xlabel("step")
    ax.set_ylabel("KL")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
