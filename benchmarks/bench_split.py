"""Splitter benchmark: pySBD's English golden rules and throughput, ours beside pySBD.

    .venv/bin/python benchmarks/bench_split.py [--quick] [--baseline [REV]]

1. pySBD's 48 English golden rules (shipped in the `pysbd` package as
   `benchmarks/english_golden_rules.py`, loaded by path): how many `split_sentences` passes
   (target >= 46) and how many pySBD itself passes, compared as pySBD compares them (lists of
   sentences, whitespace collapsed).
2. Throughput in MB/s (UTF-8 bytes) of `split_sentences` on ~20 MB of markdown (sample_docs/
   texts repeated; ~2 MB with --quick), per document (target >= 20 MB/s) and as one string;
   pySBD on a ~1 MB slice of the same corpus (~0.1 MB with --quick; it is two orders of magnitude
   slower), with `split_sentences` on the same slice for a like-for-like ratio; and
   `split_sentences` on ~5 MB of Chinese, Japanese and Korean markdown (the sample below,
   repeated; ~0.5 MB with --quick). Best of 3 runs (1 for pySBD); the wall figure is judged,
   the CPU figure (this process only) is in the note, since the machine may be shared.
3. With --baseline [REV], the golden rules and the per-document throughput of
   `locallens/sentences.py` as of git revision REV (default HEAD; `git show
   REV:locallens/sentences.py`), measured in the same run: before and after a change.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import _common as c
from bench_trim import mb, replicate, sample_texts

TARGET_GOLDEN = 46
TARGET_MB_S = 20.0
REPEATS = 3

# Chinese, Japanese and Korean markdown: headings, prose with fullwidth marks, quotations
# inside sentences, lists, a table and a code fence.
CJK_SAMPLE = """\
# 上海办公室指南

报销请在每月五日前提交。打印机在三楼，复印机在五楼！会议室需要提前预约吗？需要。
他说：“周五之前把报告交上来。”然后离开了会议室。新员工第一天请到前台领取门禁卡。
如果忘记密码，请联系IT部门（分机８８０１）。系统每晚２３．３０自动备份。

- 第一步：登录内部系统。
- 第二步：填写申请表，并附上发票。
- 第三步：等待主管审批。

| 项目 | 负责人 |
|------|--------|
| 报销 | 财务部 |

## 東京オフィスについて

会議は毎週月曜日の十時からです。「資料は？」と聞かれたら、共有フォルダを案内してください。
休暇の申請は二週間前までに行ってください！急な病欠の場合は、当日の朝九時までに連絡すること。
本当？と思うかもしれませんが、規則です。詳細は社内ポータルを参照してください．

```bash
# 設定ファイルを確認する。
cat /etc/app/config.yaml
```

## 서울 사무소 안내

회의는 매주 월요일 오전 10시에 시작합니다. 자료를 미리 준비하세요. 질문이 있나요? 팀장에게
문의하세요! 출입증은 첫날 안내 데스크에서 받을 수 있습니다.
"""


# ------------------------------------------------------------------------------------------
# Loading
# ------------------------------------------------------------------------------------------


def golden_rules() -> list[tuple[str, list[str]]]:
    """pySBD's English golden rules, from the installed package (not copied here)."""
    import pysbd

    path = Path(pysbd.__file__).resolve().parent.parent / "benchmarks" / "english_golden_rules.py"
    spec = importlib.util.spec_from_file_location("_pysbd_english_golden_rules", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.GOLDEN_EN_RULES)


def committed_splitter(tmp: Path, revision: str) -> ModuleType:
    """`locallens/sentences.py` as of git `revision`, loaded as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{revision}:locallens/sentences.py"], cwd=c.ROOT, capture_output=True, text=True, check=True
    ).stdout
    path = tmp / "sentences_head.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("_sentences_head", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------------
# Measuring
# ------------------------------------------------------------------------------------------


def golden_score(split: Callable[[str], list[str]], rules: list[tuple[str, list[str]]]) -> tuple[int, list[int]]:
    """(rules passed, numbers of the failing rules), compared with whitespace collapsed."""

    def norm(sentences: list[str]) -> list[str]:
        return [" ".join(s.split()) for s in sentences]

    failing = [n for n, (text, expected) in enumerate(rules, start=1) if norm(split(text)) != norm(expected)]
    return len(rules) - len(failing), failing


def throughput(split: Callable[[str], list[str]], texts: list[str], repeats: int) -> tuple[float, float, int]:
    """(best wall MB/s, best CPU MB/s, units) of splitting every text, best of `repeats`."""
    size = mb(texts)
    split(texts[0])  # warm-up (regex compilation)
    walls, cpus, units = [], [], 0
    for _ in range(repeats):
        wall, cpu, units = c.timed_cpu(lambda: sum(len(split(t)) for t in texts))
        walls.append(wall)
        cpus.append(cpu)
    return size / min(walls), size / max(min(cpus), 1e-9), units


def add_speed(
    table: c.Table, figure: str, result: tuple[float, float, int], size: float, target: bool = False, note: str = ""
) -> None:
    wall, cpu, units = result
    table.add(
        figure,
        f"{wall:.2f} MB/s",
        f">= {TARGET_MB_S:g} MB/s" if target else "",
        (wall >= TARGET_MB_S) if target else None,
        note=f"CPU {cpu:.2f} MB/s; {size:.2f} MB, {units:,} units" + (f"; {note}" if note else ""),
    )


def parse_args() -> argparse.Namespace:
    """`--quick` as in every script (`_common.parse_args`), and `--baseline [REV]`, a string."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="a small version for smoke-testing (under a minute); default: full size"
    )
    parser.add_argument(
        "--baseline",
        nargs="?",
        const="HEAD",
        default=None,
        metavar="REV",
        help="also measure locallens/sentences.py as of git revision REV (default HEAD), in the same run",
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    c.offline_env()
    started = time.perf_counter()
    c.print_machine("locallens splitter benchmark", args.quick)

    import pysbd

    from locallens.sentences import split_sentences

    segmenter = pysbd.Segmenter(language="en", clean=False)
    table = c.Table("Splitter benchmark")

    with tempfile.TemporaryDirectory(prefix="locallens-bench-split-") as tmp:
        baseline = committed_splitter(Path(tmp), args.baseline) if args.baseline else None

        rules = golden_rules()
        table.section(f"pySBD's English golden rules ({len(rules)})")
        ours, ours_failing = golden_score(split_sentences, rules)
        table.add(
            "split_sentences",
            f"{ours}/{len(rules)}",
            f">= {TARGET_GOLDEN}",
            ours >= TARGET_GOLDEN,
            note="failing: " + (", ".join(f"#{n}" for n in ours_failing) or "none"),
        )
        theirs, theirs_failing = golden_score(segmenter.segment, rules)
        table.add(
            f"pysbd {pysbd.__version__}",
            f"{theirs}/{len(rules)}",
            note="language='en', clean=False; failing: " + (", ".join(f"#{n}" for n in theirs_failing) or "none"),
        )
        if baseline is not None:
            before, before_failing = golden_score(baseline.split_sentences, rules)
            table.add(
                f"split_sentences as of {args.baseline}",
                f"{before}/{len(rules)}",
                note="failing: " + (", ".join(f"#{n}" for n in before_failing) or "none"),
            )

        texts = [text for _, text in sample_texts()]
        corpus = replicate(texts, (2 if args.quick else 20) * 1e6)
        size = mb(corpus)
        table.section("throughput (UTF-8 MB/s; markdown from sample_docs/, repeated)")
        c.note(f"split_sentences on {size:.1f} MB, per document (best of {REPEATS})")
        add_speed(
            table,
            "split_sentences, per document",
            throughput(split_sentences, corpus, REPEATS),
            size,
            target=True,
            note=f"{len(corpus):,} documents",
        )
        if baseline is not None:
            c.note(f"split_sentences as of {args.baseline} on {size:.1f} MB, per document (best of {REPEATS})")
            add_speed(
                table,
                f"  as of {args.baseline}, per document",
                throughput(baseline.split_sentences, corpus, REPEATS),
                size,
                note="same corpus, same run",
            )
        joined = ["\n\n".join(corpus)]
        c.note(f"split_sentences on {size:.1f} MB as one string")
        add_speed(
            table, "split_sentences, one string", throughput(split_sentences, joined, 1), size, note="linearity check"
        )
        del joined

        piece = replicate(texts, (0.1 if args.quick else 1) * 1e6)
        piece_size = mb(piece)
        c.note(f"pysbd on a {piece_size:.2f} MB slice")
        theirs_speed = throughput(segmenter.segment, piece, 1)
        ours_speed = throughput(split_sentences, piece, REPEATS)
        add_speed(table, f"split_sentences, {piece_size:.2f} MB slice", ours_speed, piece_size)
        table.add(
            f"pysbd {pysbd.__version__}, same slice",
            f"{theirs_speed[0]:.3f} MB/s",
            note=f"CPU {theirs_speed[1]:.3f} MB/s; {theirs_speed[2]:,} units; split_sentences is "
            f"{ours_speed[0] / theirs_speed[0]:.0f}x faster (wall)",
        )

        cjk = replicate([CJK_SAMPLE], (0.5 if args.quick else 5) * 1e6)
        cjk_size = mb(cjk)
        c.note(f"split_sentences on {cjk_size:.1f} MB of CJK markdown")
        add_speed(
            table,
            "split_sentences, CJK markdown",
            throughput(split_sentences, cjk, REPEATS),
            cjk_size,
            note=f"zh/ja/ko sample x{len(cjk):,}; {len(split_sentences(CJK_SAMPLE))} units each",
        )

    table.print()
    c.print_end(started)


if __name__ == "__main__":
    sys.exit(main())
