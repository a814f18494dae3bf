"""Build the offline detector's word data (``hindsight_lab/conflicts/data/*.tsv``) from the WordNet 3.0 files.

Source: Princeton WordNet 3.0 (the Debian package ``wordnet-base`` installs its ``data.*``, ``index.*`` and
``verb.exc`` files; ``dpkg -L wordnet-base`` shows where); licence: the WordNet 3.0 licence, copied to
``data/WORDNET_LICENSE``.

Kept, for verbs and adjectives (``!`` antonym pointers, described in WordNet's ``wndb(5WN)`` and ``wnintro(5WN)``):

- **direct**: the lexical antonym pairs (``accept`` / ``reject``, ``open`` / ``close``, ``optional`` /
  ``obligatory``);
- **synset** (verbs): every single-word lemma of one synset against every lemma of the antonym synset
  (``allow``, one of {allow, let, permit}, against ``forbid``);
- **indirect** (adjectives): a satellite adjective against the antonym of its head (``mandatory``, similar to
  ``obligatory``, against ``optional``), WordNet's own notion of indirect antonymy.

Only senses a word commonly has are used: a lemma's sense must be among its first ``--max-rank`` senses (WordNet
orders senses by their frequency in the SemCor tagged corpus), which drops rare readings such as ``keep`` meaning
"prevent" (so ``keep`` is not made the opposite of ``allow``). Multi-word verb lemmas are kept with ``_``
(``leave_out``); adjectives are single words.

With ``--verbs-out``, also the synsets of each single-word verb's first two senses and their direct hypernyms
(``data/verbs.tsv``): two verbs name the same action when one of them is a synonym or a direct hypernym of the other
(``update`` → {change, alter, modify}, so ``update`` ~ ``modify``).

With ``--irregular-out``, the irregular verb forms of ``verb.exc`` (``kept`` → ``keep``; forms that are also
nouns, such as ``ground``, or adjectives of the opposites, such as ``paid``, left out), so that the stemmer meets
"kept" and "keep" (``data/irregular.tsv``).

A direct pair may be kept to a deeper rank (``--max-rank-direct``, 4 for the shipped file): it is set word to word
by WordNet's lexicographers, so a less common sense of it is still an opposite (``hide`` / ``show``), where the
synset and indirect relations at that depth add senses such as ``keep`` meaning "prevent".

Usage: ``python scripts/build_opposites.py --wordnet DIR --out hindsight_lab/conflicts/data/opposites.tsv
--max-rank 3 --max-rank-direct 4
--verbs-out hindsight_lab/conflicts/data/verbs.tsv --irregular-out hindsight_lab/conflicts/data/irregular.tsv``
"""

from __future__ import annotations

import argparse
from pathlib import Path


def _index(folder: Path, pos: str) -> dict[tuple[str, str], int]:
    """``(lemma, synset offset) -> sense rank`` (1 = most frequent) from ``index.<pos>``."""
    ranks: dict[tuple[str, str], int] = {}
    for line in (folder / f"index.{pos}").read_text(encoding="latin-1").splitlines():
        if line.startswith(" "):
            continue
        f = line.split()
        lemma, n_synsets, n_ptrs = f[0], int(f[2]), int(f[3])
        offsets = f[4 + n_ptrs + 2:]
        for rank, off in enumerate(offsets[:n_synsets], 1):
            ranks[(lemma, off)] = rank
    return ranks


def _data(folder: Path, pos: str) -> dict[str, tuple[str, list[str], list[tuple[str, str, int, int]]]]:
    """``offset -> (synset type, lemmas, pointers (symbol, target offset, source word, target word))``."""
    out = {}
    for line in (folder / f"data.{pos}").read_text(encoding="latin-1").splitlines():
        if line.startswith(" "):
            continue
        f = line.split("|")[0].split()
        n_words = int(f[3], 16)
        words = [f[4 + 2 * i].lower().split("(")[0] for i in range(n_words)]
        k = 4 + 2 * n_words
        pointers = []
        for _ in range(int(f[k])):
            sym, target, _pos, st = f[k + 1:k + 5]
            pointers.append((sym, target, int(st[:2], 16), int(st[2:], 16)))
            k += 4
        out[f[0]] = (f[2], words, pointers)
    return out


def build(folder: Path, max_rank: int, max_rank_direct: int | None = None) -> list[tuple[str, str, str, str]]:
    """The opposites; a direct (lexical) antonym pair is kept while both senses are among the first
    ``max_rank_direct`` (default ``max_rank``), the derived relations only among the first ``max_rank``."""
    direct_rank = max_rank if max_rank_direct is None else max_rank_direct
    rows: set[tuple[str, str, str, str]] = set()
    for pos, tag in (("verb", "v"), ("adj", "a")):
        ranks, syn = _index(folder, pos), _data(folder, pos)

        def common(word: str, off: str, rank: int = max_rank) -> bool:  # adjectives: single words; verbs: also
            # phrasal ("leave_out")
            return ranks.get((word, off), 99) <= rank and (
                word.isalpha() or pos == "verb" and word.replace("_", "").isalpha())

        def add(a: str, off_a: str, b: str, off_b: str, relation: str) -> None:
            rank = direct_rank if relation == "direct" else max_rank
            if a != b and common(a, off_a, rank) and common(b, off_b, rank):
                rows.add((*sorted((a, b)), tag, relation))

        for off, (_kind, words, pointers) in syn.items():
            for sym, target, src, tgt in pointers:
                if sym != "!":
                    continue
                if src and tgt:
                    add(words[src - 1], off, syn[target][1][tgt - 1], target, "direct")
                if pos == "verb":
                    for a in words:
                        for b in syn[target][1]:
                            add(a, off, b, target, "synset")
            if pos == "adj" and _kind == "s":
                for sym, head, _s, _t in pointers:
                    if sym != "&":
                        continue
                    for sym2, anto, _s2, tgt2 in syn[head][2]:
                        if sym2 == "!":
                            for a in words:
                                add(a, off, syn[anto][1][tgt2 - 1], anto, "indirect")
    # a pair found by several relations is kept once, by the strongest
    best: dict[tuple[str, str, str], str] = {}
    order = {"direct": 0, "synset": 1, "indirect": 2}
    for a, b, tag, rel in rows:
        key = (a, b, tag)
        if key not in best or order[rel] < order[best[key]]:
            best[key] = rel
    return sorted((a, b, tag, rel) for (a, b, tag), rel in best.items())


def verb_senses(folder: Path, max_rank: int) -> list[tuple[str, list[str], list[str]]]:
    """``(verb, its synsets, their direct hypernyms)`` for single-word verbs, common senses only."""
    ranks, syn = _index(folder, "verb"), _data(folder, "verb")
    own: dict[str, set[str]] = {}
    hyper: dict[str, set[str]] = {}
    for (lemma, off), rank in ranks.items():
        if rank <= max_rank and lemma.isalpha():
            own.setdefault(lemma, set()).add(off)
            hyper.setdefault(lemma, set()).update(t for sym, t, _s, _t in syn[off][2] if sym == "@")
    return [(lemma, sorted(own[lemma]), sorted(hyper[lemma])) for lemma in sorted(own)]


def irregular_forms(folder: Path, adjectives: set[str]) -> list[tuple[str, str]]:
    """``(inflected form, verb)`` from WordNet's ``verb.exc`` (``kept`` → ``keep``), single words only, leaving out
    forms that are also nouns in WordNet (``ground``, ``saw``), which would turn a noun into a verb, and the
    ``adjectives`` of the opposites list (``paid``, against ``free``)."""
    nouns = {line.split(" ", 1)[0] for line in (folder / "index.noun").read_text(encoding="latin-1").splitlines()
             if not line.startswith(" ")} | adjectives
    out = []
    for line in (folder / "verb.exc").read_text(encoding="latin-1").splitlines():
        form, *lemmas = line.split()
        if lemmas and form.isalpha() and lemmas[0].isalpha() and form not in nouns:
            out.append((form, lemmas[0]))
    return sorted(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wordnet", type=Path, required=True, help="folder with WordNet 3.0 data.* and index.* files")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--max-rank", type=int, default=3)
    ap.add_argument("--max-rank-direct", type=int, default=None,
                    help="sense rank up to which a direct (lexical) antonym pair is kept (default: --max-rank)")
    ap.add_argument("--verbs-out", type=Path, help="also write the verbs' synsets and hypernyms (first 2 senses)")
    ap.add_argument("--irregular-out", type=Path, help="also write irregular verb forms (verb.exc)")
    args = ap.parse_args()
    if args.irregular_out:
        with args.irregular_out.open("w", encoding="utf-8") as fh:
            fh.write("# Irregular verb forms from Princeton WordNet 3.0 verb.exc (see WORDNET_LICENSE); "
                     "forms that are also nouns, or adjectives of the opposites, left out\n# form\tverb\n")
            adjectives = {w for a, b, tag, _rel in build(args.wordnet, args.max_rank) if tag == "a" for w in (a, b)}
            for form, lemma in irregular_forms(args.wordnet, adjectives):
                fh.write(f"{form}\t{lemma}\n")
    if args.verbs_out:
        with args.verbs_out.open("w", encoding="utf-8") as fh:
            fh.write("# Verb senses from Princeton WordNet 3.0 (see WORDNET_LICENSE); scripts/build_opposites.py: "
                     "the first 2 senses of each verb\n# verb\tsynset offsets\tdirect hypernym offsets\n")
            for lemma, own, hyper in verb_senses(args.wordnet, 2):
                fh.write(f"{lemma}\t{','.join(o.lstrip('0') for o in own)}\t{','.join(h.lstrip('0') for h in hyper)}\n")
    rows = build(args.wordnet, args.max_rank, args.max_rank_direct)
    with args.out.open("w", encoding="utf-8") as fh:
        direct = f" --max-rank-direct {args.max_rank_direct}" if args.max_rank_direct else ""
        fh.write(f"# Opposites from Princeton WordNet 3.0 (see WORDNET_LICENSE); scripts/build_opposites.py "
                 f"--max-rank {args.max_rank}{direct}\n# word_a\tword_b\tpos\trelation\n")
        for row in rows:
            fh.write("\t".join(row) + "\n")


if __name__ == "__main__":
    main()
