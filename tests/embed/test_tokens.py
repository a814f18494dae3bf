"""TokenCounter: the embedding model's own tokenizer, no special tokens, no truncation."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from hindsight_lab.embed import HashingEmbedder, SentenceTransformerEmbedder, TokenCounter
from hindsight_lab.embed.sentence_transformers import packaged_model_path
from hindsight_lab.errors import ConfigError

SAMPLES = [
    "refund",
    "a cancelled flight",
    "Refund a cancelled flight, please!",
    "Order #4411 arrived damaged; the user's replacement (SKU-77) is late.",
    "Café déjà vu — naïve résumé 🙂",
    "",
]
LONG = " ".join(f"word{i % 97} and more" for i in range(700))  # 2,100 words


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter.for_embedder(SentenceTransformerEmbedder())


@pytest.fixture(scope="module")
def hf_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(packaged_model_path()))


def _independent(tok, text: str) -> int:
    return len(tok.encode(text, add_special_tokens=False, verbose=False))


def test_known_counts(counter):
    assert counter.name() == "sentence-transformers/all-MiniLM-L6-v2"
    assert counter.count("refund") == 2  # re ##fund
    assert counter.count("a cancelled flight") == 3
    assert counter.count("") == 0


@pytest.mark.slow
@pytest.mark.parametrize("text", SAMPLES)
def test_counts_match_the_model_tokenizer(counter, hf_tokenizer, text):
    assert counter.count(text) == _independent(hf_tokenizer, text)


def test_long_text_is_not_truncated(counter, hf_tokenizer):
    n = counter.count(LONG)
    assert n == _independent(hf_tokenizer, LONG)
    assert n >= 2100  # far past the tokenizer.json's 128 and the model's 256


def test_count_many_equals_count(counter):
    texts = SAMPLES + [LONG]
    assert counter.count_many(texts) == [counter.count(t) for t in texts]
    assert counter.count_many([]) == []


def test_counting_is_lazy_and_needs_no_torch():
    lazy = TokenCounter.for_embedder(SentenceTransformerEmbedder())
    assert lazy.encode_many_ is None
    code = ("import sys; from hindsight_lab.embed import *; "
            "c = TokenCounter.for_embedder(SentenceTransformerEmbedder()); assert c.count('a cancelled flight') == 3; "
            "assert 'torch' not in sys.modules, 'counting imported torch'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow
def test_falls_back_to_the_model_tokenizer_without_tokenizer_json(tmp_path, hf_tokenizer):
    src = packaged_model_path()
    for path in src.rglob("*"):
        if path.is_file() and path.name != "tokenizer.json":
            dest = tmp_path / path.relative_to(src)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.symlink_to(path)
    emb = SentenceTransformerEmbedder(str(tmp_path))
    counter = TokenCounter.for_embedder(emb)
    assert counter.tokenizer_file is None and counter.embedder is emb
    texts = SAMPLES + [LONG]
    assert counter.count_many(texts) == [_independent(hf_tokenizer, t) for t in texts]


def test_hashing_embedder_counts_words_and_punctuation():
    counter = TokenCounter.for_embedder(HashingEmbedder())
    assert counter.name() == "regex-words"
    assert counter.count("Refund it, please!") == 5
    assert counter.count_many(["a b", "", "x-y"]) == [2, 0, 3]


def test_unknown_embedder_warns_and_counts_words(caplog):
    class Other:
        def name(self) -> str:
            return "other"

    with caplog.at_level(logging.WARNING, logger="hindsight_lab.embed.tokens"):
        counter = TokenCounter.for_embedder(Other())
    assert "no tokenizer known" in caplog.text
    assert counter.name() == "regex-words" and counter.count("a b.") == 3


def test_errors(counter):
    with pytest.raises(TypeError, match="count\\(\\) takes a str"):
        counter.count(["a"])
    with pytest.raises(TypeError, match="got a single str"):
        counter.count_many("abc")
    with pytest.raises(ConfigError, match="expected a tokenizer.json file"):
        TokenCounter("/no/such/tokenizer.json").count("x")
