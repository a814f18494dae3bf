"""The server's own settings: a served config file's ``server:`` section, ``--set server.<key>`` overrides, and
the errors that name the key (no server is started here)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml

from hindsight_lab import ConfigError, LabConfig
from hindsight_lab.cli import main
from hindsight_lab.server.config import ServerConfig, load_served, served_yaml
from support import REPO


def test_defaults_and_every_field_documented() -> None:
    s = ServerConfig()
    assert (s.tool_prefix, s.max_content_chars, s.max_top_k, s.lock_wait_s, s.maintenance_interval_s,
            s.token_env) == ("hindsight_", 4000, 50, 10.0, 3600.0, "HINDSIGHT_MCP_TOKEN")
    docs = ServerConfig.describe()
    assert set(docs) == {f"server.{name}" for name in ServerConfig.model_fields} and all(docs.values())


def test_a_served_file_splits_into_the_memory_config_and_the_server_settings(tmp_path: Path) -> None:
    path = tmp_path / "served.yaml"
    text = served_yaml(LabConfig().with_params({"retrieval.top_k": 7}), ServerConfig(tool_prefix="team_"), path)
    data = yaml.safe_load(text)
    assert list(data)[-2:] == ["server", "provenance"] and data["server"]["tool_prefix"] == "team_"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # serve reads the section: no deprecation warning on its path
        lab, settings = load_served(path, {"server.lock_wait_s": 0.5, "retrieval.min_score": 0.1})
    assert (lab.retrieval.top_k, lab.retrieval.min_score) == (7, 0.1)
    assert (settings.tool_prefix, settings.lock_wait_s) == ("team_", 0.5)
    assert settings.max_top_k == ServerConfig().max_top_k  # the rest of the section: defaults


def test_a_file_without_a_server_section_serves_with_the_defaults() -> None:
    # the committed default config is LabConfig() written out; the server's defaults come from ServerConfig()
    lab, settings = load_served(REPO / "experiments" / "configs" / "default.yaml")
    assert lab == LabConfig() and settings == ServerConfig()
    # a whole section given as one override, as LabConfig.with_params took it: missing fields take defaults
    _, settings = load_served(None, {"server": {"max_top_k": 10}, "server.tool_prefix": ""})
    assert (settings.max_top_k, settings.tool_prefix, settings.lock_wait_s) == (10, "", 10.0)


@pytest.mark.parametrize("text, overrides, match", [
    ("server: {colour: red}", {}, r"served.yaml: invalid config: server.colour: unknown config key"),
    ("server: {max_top_k: 0}", {}, r"served.yaml: invalid config: server.max_top_k: .*greater than or equal to 1"),
    ("server: [1, 2]", {}, r"served.yaml: invalid config: server: .*valid dictionary"),
    ("{}", {"server.colour": 1}, r"unknown config key 'server.colour'"),
    ("{}", {"server.token_env": "not a name"}, r"server.token_env: String should match pattern"),
    ("{}", {"tool_prefix": "x_"}, r"unknown config key 'tool_prefix'; did you mean 'server.tool_prefix'"),
])
def test_bad_server_settings_name_the_key(tmp_path: Path, text: str, overrides: dict, match: str) -> None:
    path = tmp_path / "served.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_served(path, overrides)


def test_serve_refuses_a_bad_server_override_before_opening_anything(tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    code = main(["serve", "--config", str(REPO / "experiments" / "configs" / "default.yaml"), "--store", str(store),
                 "--set", "server.max_top_k=0"])
    assert code == 2 and "server.max_top_k" in capsys.readouterr().err
    assert not store.exists()
