"""Tracking: MLflow runs in the project's one default store (:mod:`.runs`: replays as runs, their params, metrics
and artifacts) and the configs exported from them for production (:mod:`.export`: a file ``serve --config``
loads, with its provenance and no secret)."""

from .runs import (EXPERIMENT, TrackedRun, artifact_location, client, default_tracking_uri, experiment_id,
                   log_replay, metric_key, numeric_leaves, param_value, replay_metrics, replay_params, start_run)

__all__ = ["EXPERIMENT", "TrackedRun", "artifact_location", "client", "default_tracking_uri", "experiment_id",
           "log_replay", "metric_key", "numeric_leaves", "param_value", "replay_metrics", "replay_params",
           "start_run"]
