"""LabConfig: defaults of DESIGN §2–§3, documentation and markers, YAML round trip, dotted overrides, errors."""

from __future__ import annotations

import pytest
import yaml

from hindsight_lab import ConfigError, LabConfig
from support import REPO


def test_defaults_are_the_documented_values():
    cfg = LabConfig()
    w = cfg.retrieval.weights
    assert w.model_dump() == dict(semantic=0.5, lexical=0.2, task_type=0.6, task_type_p=0.0, confidence=0.05,
                                  recency=0.05, episode=0.0, fused=0.0, redundancy=0.1)
    c = cfg.retrieval.classifier  # chosen by experiments/default_selection_lures.yaml, then contrast by _contrast
    assert (c.method, c.learn_from, c.min_share, c.intent, c.intent_match, c.instance_blind, c.contrast) == (
        "embedding", "successes", 0.3, True, "same", True, True)
    assert cfg.retrieval.min_relative_score == 0.0 and cfg.reflect.triggers.every_episode is False
    r = cfg.retrieval
    assert (r.top_k, r.path_depth, r.min_similarity, r.max_triggered, r.token_budget,
            r.recency_half_life_days, r.min_score) == (5, 20, 0.2, 2, 600, 14.0, 0.0)
    assert cfg.dedup.similarity == 0.92
    p = cfg.promotion
    assert (p.min_hits, p.min_mean_confidence, p.require_counter_examples) == (3, 0.7, True)
    d = cfg.decay
    assert (d.l2_archive_days, d.l3_decay_days, d.l3_decay_factor, d.l3_archive_days) == (30, (90, 180), 0.8, 270)
    assert cfg.feedback.delete_after_downs == 2
    assert cfg.embedder.model == "all-MiniLM-L6-v2" and cfg.provenance is None


def test_every_field_is_documented_and_behaviour_fields_are_marked():
    docs = LabConfig.describe()
    assert all(docs.values()), [k for k, v in docs.items() if not v]
    marked = LabConfig.behaviour_fields()
    for key in ("retrieval.weights.semantic", "retrieval.top_k", "dedup.similarity", "promotion.min_hits",
                "decay.l3_decay_days", "feedback.delete_after_downs", "embedder.model"):
        assert key in marked, key
    for key in ("store.path", "store.url", "embedder.device", "embedder.batch_size", "retrieval.track_retrievals"):
        assert key not in marked, key  # where memory lives and how fast it runs do not change behaviour
    assert set(marked["retrieval.weights.semantic"]) == {"recall"}


def test_frozen_and_extra_forbidden():
    cfg = LabConfig()
    with pytest.raises(Exception, match="frozen"):
        cfg.retrieval.top_k = 3  # type: ignore[misc]
    with pytest.raises(ConfigError, match="retrieval.colour: unknown config key"):
        LabConfig.from_dict({"retrieval": {"colour": "red"}})


def test_with_params_dotted_and_kwargs_validates_the_whole():
    cfg = LabConfig().with_params({"retrieval.weights.semantic": 0.6}, retrieval__top_k=10)
    assert cfg.retrieval.weights.semantic == 0.6 and cfg.retrieval.top_k == 10
    assert LabConfig().retrieval.weights.semantic == 0.5  # the original is untouched
    with pytest.raises(ConfigError, match="retrieval.top_k"):
        LabConfig().with_params({"retrieval.top_k": 0})
    with pytest.raises(ConfigError, match="unknown config key 'top_k'; did you mean 'retrieval.top_k'"):
        LabConfig().with_params({"top_k": 3})
    with pytest.raises(ConfigError, match="at least one positive term weight"):
        LabConfig().with_params({f"retrieval.weights.{t}": 0.0 for t in ("semantic", "lexical", "task_type",
                                                                          "confidence", "recency")})
    section = LabConfig().with_params({"retrieval.weights": {"semantic": 1.0}})
    assert section.retrieval.weights.semantic == 1.0 and section.retrieval.weights.task_type == 0.6


def test_flat_lists_every_leaf():
    flat = LabConfig().flat()
    assert flat["retrieval.weights.redundancy"] == 0.1 and flat["store.namespace"] == "default"
    assert not any(k.startswith("provenance") for k in flat)
    assert set(LabConfig.behaviour_fields()) <= set(flat)


def test_yaml_round_trip_and_default_file(tmp_path):
    cfg = LabConfig().with_params({"retrieval.top_k": 7, "decay.l3_decay_days": [60, 120]})
    path = tmp_path / "c.yaml"
    cfg.to_yaml(path)
    assert LabConfig.from_yaml(path) == cfg
    # the committed default file is the default config written out
    assert LabConfig.from_yaml(REPO / "experiments" / "configs" / "default.yaml") == LabConfig()
    assert yaml.safe_load((REPO / "experiments" / "configs" / "default.yaml").read_text()) == LabConfig().to_dict()


def test_behaviour_only_export_keeps_marked_fields_and_provenance(tmp_path):
    cfg = LabConfig().with_params({"store.path": "somewhere", "provenance": {"run_id": "abc",
                                                                             "metrics": {"ndcg@5": 0.5}}})
    data = cfg.to_dict(only_behaviour=True)
    assert "store" not in data and data["provenance"]["run_id"] == "abc"
    assert data["retrieval"]["weights"]["semantic"] == 0.5
    path = tmp_path / "export.yaml"
    cfg.to_yaml(path, only_behaviour=True)
    back = LabConfig.from_yaml(path)
    assert back.store == LabConfig().store and back.provenance == cfg.provenance


@pytest.mark.parametrize("text, match", [
    ("retrieval: [1, 2]", "retrieval"),
    ("- a\n- b", "expected a mapping"),
    ("retrieval: {top_k: 'many'}", "retrieval.top_k"),
    ("schema_version: 2", "schema_version"),
    ("retrieval: {top_k: 3", "not valid YAML"),
    ("retrieval: {classifier: {intent: false, intent_match: no_conflict}}",
     r"retrieval\.classifier.*intent_match.*intent: true"),
])
def test_bad_yaml_names_the_file_and_field(tmp_path, text, match):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match) as info:
        LabConfig.from_yaml(path)
    assert "bad.yaml" in str(info.value)


def test_missing_file():
    with pytest.raises(ConfigError, match="not found"):
        LabConfig.from_yaml("no/such/file.yaml")


def test_export_keeps_the_llm_connection_and_never_echoes_a_pasted_key(tmp_path):
    # Regression (issue 16): `export` dropped reflect.llm.api_key_env and api_base, so a re-loaded export had no
    # LLM settings; and a key pasted into api_key_env by mistake was echoed in the error.
    from hindsight_lab.tracking.export import export_config

    cfg = LabConfig().with_params({"reflect.reflector": "litellm", "reflect.llm.model": "openai/local",
                                   "reflect.llm.api_base": "http://127.0.0.1:8080/v1",
                                   "reflect.llm.api_key_env": "LOCAL_LLM_KEY",
                                   "conflicts.llm.api_key_env": "JUDGE_KEY"})
    export_config(cfg, tmp_path / "tuned.yaml")
    back = LabConfig.from_yaml(tmp_path / "tuned.yaml")
    assert (back.reflect.llm.api_base, back.reflect.llm.api_key_env) == ("http://127.0.0.1:8080/v1", "LOCAL_LLM_KEY")
    assert back.conflicts.llm.api_key_env == "JUDGE_KEY"
    secret = "sk-proj-4f9a2b7c1d8e"
    with pytest.raises(ConfigError, match="must be the NAME of the environment variable") as err:
        LabConfig().with_params({"reflect.llm.api_key_env": secret})
    assert secret not in str(err.value) and "not shown" in str(err.value)


def test_a_server_section_is_ignored_with_a_deprecation_warning(tmp_path):
    # LabConfig describes the memory system only; a file written before the server's settings moved out (it has a
    # server: section) still loads, for one release, and says where the section went
    from hindsight_lab.server.config import ServerConfig, served_yaml

    path = tmp_path / "old.yaml"
    served_yaml(LabConfig().with_params({"retrieval.top_k": 7}), ServerConfig(tool_prefix="team_"), path)
    with pytest.warns(DeprecationWarning, match="server settings now belong to hindsight_lab.server.config."
                                                "ServerConfig; hindsight-lab serve reads the section") as info:
        cfg = LabConfig.from_yaml(path)
    assert len(info) == 1 and info[0].filename == __file__  # once, at the caller
    assert cfg == LabConfig().with_params({"retrieval.top_k": 7}) and not hasattr(cfg, "server")
    with pytest.warns(DeprecationWarning, match="server settings now belong"):
        assert LabConfig.from_dict({"server": None}) == LabConfig()
    with pytest.raises(ConfigError, match="colour: unknown config key"), pytest.warns(DeprecationWarning):
        LabConfig.from_dict({"server": {}, "colour": 1})  # only the server section is let through


def test_with_params_refuses_server_keys_and_names_their_new_place():
    # refused, not ignored: a caller that sets server.lock_wait_s on a LabConfig must not believe it took effect
    for key, value in (("server.tool_prefix", "team_"), ("server", {"lock_wait_s": 1.0})):
        with pytest.raises(ConfigError, match=rf"{key}: server settings now belong to hindsight_lab\.server\.config"
                                              r"\.ServerConfig.*serve --set"):
            LabConfig().with_params({key: value})
    assert "server" not in LabConfig().to_dict() and not any(k.startswith("server") for k in LabConfig.describe())


def test_a_rerank_term_is_its_feature_and_its_weight_and_nothing_else_names_it():
    # issue 53: a term is defined in two places, its feature (retrieve/features.py) and its weight (here); the
    # rerank's columns, the all-zero check and the fit read them from there
    from hindsight_lab.config import WeightsConfig
    from hindsight_lab.retrieve.features import FEATURES
    from hindsight_lab.retrieve.rerank import PENALTY, TERMS

    assert TERMS == tuple(FEATURES)
    assert list(WeightsConfig.model_fields) == [*TERMS, PENALTY] or set(WeightsConfig.model_fields) == {*TERMS,
                                                                                                       PENALTY}
    only = {f"retrieval.weights.{t}": 0.0 for t in TERMS}
    for term in TERMS:  # any one term alone is a valid config
        assert LabConfig().with_params({**only, f"retrieval.weights.{term}": 1.0})
