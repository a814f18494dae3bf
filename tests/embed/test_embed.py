"""Embedders: the real packaged MiniLM (no mocks) and the hashing stand-in."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

from hindsight_lab.embed import HashingEmbedder, SentenceTransformerEmbedder, make_embedder
from hindsight_lab.errors import ConfigError

TEXTS = [
    "refund a cancelled flight",
    "The customer wants to change the seat on flight BA117 to an aisle seat.",
    "book a hotel in Paris",
    "Order #4411 arrived damaged; the user asks for a replacement and is upset about the delay.",
    "x",
]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_import_does_not_load_torch_or_sentence_transformers():
    code = ("import hindsight_lab.embed, sys; "
            "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_name_and_tokenizer_path_do_not_load_the_model():
    emb = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    assert emb.name() == "sentence-transformers/all-MiniLM-L6-v2"
    assert SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2").name() == emb.name()
    assert (emb.tokenizer_path() / "tokenizer.json").is_file()
    assert emb.model_ is None
    other = SentenceTransformerEmbedder("BAAI/bge-small-en-v1.5")
    assert other.name() == "BAAI/bge-small-en-v1.5"
    assert other.tokenizer_path() is None  # a hub name, not a folder


def test_constructor_stores_params_verbatim_and_does_no_io():
    emb = SentenceTransformerEmbedder("/no/such/model", device="cuda:7", batch_size=0, query_cache_size=-1)
    assert (emb.model, emb.device, emb.batch_size, emb.query_cache_size) == ("/no/such/model", "cuda:7", 0, -1)
    assert emb.model_ is None


@pytest.mark.slow
def test_missing_model_fails_at_first_use_with_a_config_error():
    emb = SentenceTransformerEmbedder("/no/such/model")
    with pytest.raises(ConfigError, match="could not load sentence-transformers model '/no/such/model'"):
        emb.embed(["hello"])


def test_shapes_dtype_and_unit_norm(minilm):
    assert minilm.dim == 384
    vecs = minilm.embed(TEXTS)
    assert vecs.shape == (len(TEXTS), 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    query = minilm.embed_query("refund a cancelled flight")
    assert query.shape == (384,) and query.dtype == np.float32
    empty = minilm.embed([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32


def test_batched_equals_one_by_one(minilm):
    batched = minilm.embed(TEXTS)
    single = np.stack([minilm.embed([t])[0] for t in TEXTS])
    np.testing.assert_allclose(batched, single, atol=1e-5)
    small_batches = SentenceTransformerEmbedder(batch_size=2)
    small_batches.model_ = minilm.model_  # same weights, no second load
    np.testing.assert_allclose(small_batches.embed(TEXTS), batched, atol=1e-5)
    np.testing.assert_allclose(minilm.embed_query(TEXTS[1]), batched[1], atol=1e-5)


def test_a_bulk_encode_uses_its_own_thread_count_and_gives_the_same_vectors(minilm, monkeypatch):
    import torch

    from hindsight_lab.embed.threads import bulk_thread_count

    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert bulk_thread_count(0) == 3 and bulk_thread_count(2) == 2  # explicit, else the convention's variable
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert bulk_thread_count(0) >= 1
    seen = []
    real = torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (seen.append(n), real(n))[1])
    texts = TEXTS * 3
    one = SentenceTransformerEmbedder(batch_size=4, bulk_threads=1)
    one.model_ = minilm.model_
    two = SentenceTransformerEmbedder(batch_size=4, bulk_threads=2)
    two.model_ = minilm.model_
    before = torch.get_num_threads()
    np.testing.assert_allclose(two.embed(texts), one.embed(texts), atol=1e-6)
    assert torch.get_num_threads() == before  # restored after the bulk call
    assert 2 in seen and seen[-1] == before, seen
    seen.clear()
    two.embed(TEXTS[:3])  # not more than batch_size texts: the load-time count, untouched
    assert seen == []


def test_chroma_call_shape(minilm):
    out = minilm(["a", "b"])
    assert isinstance(out, list) and len(out) == 2
    assert all(v.shape == (384,) and v.dtype == np.float32 for v in out)


def test_query_cache_hits_and_disabled_cache(minilm):
    cached = SentenceTransformerEmbedder(query_cache_size=4)
    cached.model_ = minilm.model_
    for _ in range(3):
        cached.embed_query("where is my refund")
    info = cached.cache_info()
    assert (info.hits, info.misses, info.size, info.maxsize) == (2, 1, 1, 4)
    cached.clear_cache()
    assert cached.cache_info()[:2] == (0, 0) and cached.cache_info().size == 0

    uncached = SentenceTransformerEmbedder(query_cache_size=0)  # negative control
    uncached.model_ = minilm.model_
    for _ in range(3):
        uncached.embed_query("where is my refund")
    assert uncached.cache_info().hits == 0 and uncached.cache_info().size == 0


def test_caller_cannot_corrupt_the_cache(minilm):
    emb = SentenceTransformerEmbedder()
    emb.model_ = minilm.model_
    first = emb.embed_query("lost baggage")
    expected = first.copy()
    first[:] = 0.0
    again = emb.embed_query("lost baggage")
    assert emb.cache_info().hits == 1
    np.testing.assert_array_equal(again, expected)
    again[:] = 1.0
    np.testing.assert_array_equal(emb.embed_query("lost baggage"), expected)


def test_semantic_sanity_with_negative_control(minilm):
    refund, paraphrase, hotel, room = minilm.embed([
        "refund a cancelled flight",
        "get my money back for the flight I cancelled",
        "book a hotel in Paris",
        "reserve a room in Paris for two nights",
    ])
    assert _cos(refund, paraphrase) > _cos(refund, hotel) + 0.2
    # Negative control: the paraphrase is not simply close to everything, the hotel pair reverses the order.
    assert _cos(hotel, room) > _cos(hotel, paraphrase) + 0.2
    assert _cos(refund, hotel) < 0.3


def test_plugs_into_a_chroma_collection():
    # Guards the bug where Chroma's query_texts path called embed_query(input=[...]) and got a TypeError.
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    emb = HashingEmbedder(dim=64, query_cache_size=8)
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # is_legacy() keeps Chroma quiet at creation
        col = client.create_collection("embed_plug_test", embedding_function=emb,
                                       metadata={"hnsw:space": "cosine"})
    col.add(ids=["a", "b"], documents=["refund a cancelled flight", "book a hotel in Paris"])
    res = col.query(query_texts=["refund for my flight"], n_results=1)
    assert res["ids"] == [["a"]]
    assert emb.cache_info().misses == 1
    out = emb.embed_query(input=["x", "y"])
    assert isinstance(out, list) and len(out) == 2 and out[0].shape == (64,)


def test_embed_rejects_a_single_string(minilm):
    with pytest.raises(TypeError, match="got a single str"):
        minilm.embed("refund a cancelled flight")
    with pytest.raises(TypeError, match="takes one text"):
        minilm.embed_query(["refund"])


# --- hashing ---------------------------------------------------------------------------------------------

def test_hashing_basics():
    emb = HashingEmbedder()
    assert emb.name() == "hashing-256" and emb.dim == 256
    vecs = emb.embed(TEXTS)
    assert vecs.shape == (len(TEXTS), 256) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    assert emb.embed([]).shape == (0, 256)
    assert not emb.embed(["?!"]).any()  # no word characters: the zero vector
    np.testing.assert_array_equal(emb.embed_query(TEXTS[0]), vecs[0])
    assert emb.cache_info().maxsize == 0 and emb.cache_info().hits == 0


def test_hashing_shares_words_not_meaning():
    emb = HashingEmbedder()
    refund, overlap, paraphrase = emb.embed([
        "refund a cancelled flight", "refund a cancelled hotel", "get my money back for the trip I called off",
    ])
    assert _cos(refund, overlap) > 0.5
    assert _cos(refund, paraphrase) < 0.3  # no meaning: that is what the real model is for


def test_hashing_is_deterministic_across_processes():
    code = ("import sys; from hindsight_lab.embed import HashingEmbedder; "
            "sys.stdout.write(HashingEmbedder(dim=128).embed(%r).tobytes().hex())" % (TEXTS,))
    outs = {
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                       env={"PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2")
    }
    assert len(outs) == 1
    here = HashingEmbedder(dim=128).embed(TEXTS)
    np.testing.assert_array_equal(np.frombuffer(bytes.fromhex(outs.pop()), dtype=np.float32).reshape(here.shape),
                                  here)


def test_lru_eviction():
    emb = HashingEmbedder(dim=32, query_cache_size=2)
    for text in ["a", "b", "a", "c", "b"]:  # "c" evicts "b" (least recently used), so the last "b" misses
        emb.embed_query(text)
    info = emb.cache_info()
    assert (info.hits, info.misses, info.size) == (1, 4, 2)


def test_invalid_hashing_params_fail_at_first_use():
    emb = HashingEmbedder(dim=0, query_cache_size=-1)
    with pytest.raises(ConfigError, match="dim must be a positive integer, got 0"):
        emb.embed(["x"])
    with pytest.raises(ConfigError, match="query_cache_size must be an integer >= 0"):
        HashingEmbedder(query_cache_size=-1).embed_query("x")


# --- make_embedder ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "dim"), [("hashing", 256), ("hashing-256", 256), ("hashing-64", 64)])
def test_make_embedder_hashing(name, dim):
    emb = make_embedder(name, query_cache_size=3)
    assert isinstance(emb, HashingEmbedder) and emb.dim == dim and emb.query_cache_size == 3


def test_make_embedder_sentence_transformers_passes_params():
    emb = make_embedder("all-MiniLM-L6-v2", device="cuda", batch_size=8, query_cache_size=0, normalize=False)
    assert isinstance(emb, SentenceTransformerEmbedder)
    assert (emb.model, emb.device, emb.batch_size, emb.query_cache_size, emb.normalize) == (
        "all-MiniLM-L6-v2", "cuda", 8, 0, False)
    assert emb.model_ is None


@pytest.mark.parametrize("name", ["hashing-", "hashing-0", "hashing-abc", "hashing256", ""])
def test_make_embedder_rejects_bad_names(name):
    with pytest.raises(ConfigError, match="hashing|non-empty"):
        make_embedder(name)


def test_embed_query_with_embeds_the_query_and_the_others_in_one_pass_through_the_cache():
    class Counting(HashingEmbedder):
        def embed(self, texts):
            self.passes.append(list(texts))
            return super().embed(texts)

    emb = Counting(dim=64, query_cache_size=4)
    emb.passes = []
    q, others = emb.embed_query_with("lost baggage", ["lost <name>", "where is it"])
    assert emb.passes == [["lost baggage", "lost <name>", "where is it"]]  # one pass
    np.testing.assert_array_equal(q, HashingEmbedder(dim=64).embed(["lost baggage"])[0])
    np.testing.assert_array_equal(others, HashingEmbedder(dim=64).embed(["lost <name>", "where is it"]))
    # the query went into the cache: the next time only the others are embedded
    again, _ = emb.embed_query_with("lost baggage", ["lost <name>"])
    assert emb.passes[1:] == [["lost <name>"]] and emb.cache_info().hits == 1
    np.testing.assert_array_equal(again, q)
    np.testing.assert_array_equal(emb.embed_query("lost baggage"), q)
    assert len(emb.passes) == 2  # a hit: no pass
    with pytest.raises(TypeError, match="one text"):
        emb.embed_query_with(["lost baggage"], [])
