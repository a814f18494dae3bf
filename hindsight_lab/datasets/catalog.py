"""The datasets this project replays, by name: where each comes from, how it is split, and its checksum.

Every development split (``*-dev``) names its public source — repository, path and commit — and the rule that
derives the split from that file (:mod:`.splits`); ``sha256`` and ``size`` are those of the derived file in its
canonical form, so ``hindsight-lab datasets fetch NAME`` can tell that a downloaded source gives exactly this
split. The samples (``*-sample``) are a few whole tasks of a development split, derived by the same kind of rule
and committed in the project's ``datasets/samples/`` folder, so that every command runs on a fresh checkout.
Groups name several files replayed as one history (a cross-agent replay).

To add a dataset: an entry here (source, split rule, the split's sha256 and size), and, for a new format, an
adapter in this package.
"""

from __future__ import annotations

from .entry import DatasetEntry, Source
from .splits import Split, id_hash

TAU_BENCH = "sierra-research/tau-bench"
TAU2_BENCH = "sierra-research/tau2-bench"
_TAU2_RESULTS = "src/experiments/model_training/results"
_TAU2_SIMULATIONS = "data/simulations"
_TAU2_NOTE = ("the commit is the abbreviated hash recorded with the development data (its full hash could not "
              "be recovered offline) and the file name at the source is the development file's own; a download "
              "that is not this file fails the checksum")
_TAU2_SUBMISSIONS = "web/leaderboard/public/submissions"
_TAU2_SUBMISSION_NOTE = ("a leaderboard submission's trajectory file; the commit is the abbreviated hash recorded with "
                         "the development data, and the development file is named after its domain and agent, not "
                         "after the file at the source; the split keeps all 50 airline tasks, so it is the whole "
                         "source file in canonical form (the source is in that form already); a download that is "
                         "not this file fails the checksum")

_REFLEXION_DEV = (
    "08a1c64e29ebf8fe", "0da00494401047c2", "0db22bdc6e466d67", "14db76b00d990fff", "17f1ea34a5d54649",
    "18a920adb076f6dc", "218082c8ea03418d", "247abdd6d93b52d5", "296524ff85477e30", "304f8ba76920165e",
    "3912540421f6dea5", "3c55233e28f85c46", "3e3d52742b1214ad", "439447ca311b856c", "43c4fe8ba2ad6d91",
    "44c0b9377344c268", "4e092e4f15737184", "4fad9c9588f06388", "564e207d64e0753f", "5f5740b8c33c69d8",
    "670c5037706fdc54", "6ac6e7ddc6dee48f", "6bee00c8d3e3c9b2", "6dd7ccd0590d7784", "78ef017036cf4e94",
    "8612f61bb7f30ddc", "89440f38ad317729", "8a5c4842b26819bd", "8b17a0579e15f7ea", "90051ec71f294e5d",
    "91945eb185e6ddcc", "9c9d10705c651b5c", "a7724f94f67d6d11", "aa030cc8110eacc1", "b0394e7b754c78db",
    "b78980708e418aa9", "bcc2e93b74206967", "c2c685adda5d5ea8", "cdd2bfe2fd0162e0", "cef9863dc9a76daa",
    "d0dfc1702228dbae", "d21a62ab15547112", "d6d5c9fdf8e2d790", "dba3fbd5272f697c", "dcd5d1bdb588fa4d",
    "dfdf3fd3f67fe881", "e93555aa3c8fcda6", "ecbf7c1f845fb4db", "ed79b249f44db7fa",
)

_TELECOM_GPT41 = (
    "01dcf0b37bc022b8", "0bf32c3e33f77f21", "0c74eb0f125a891d", "0d9cf7969189b2ae", "0de5869a0be1e775",
    "27d460917d0529d9", "2ec351be4496fb08", "34eff2ba1c9e46e0", "39958e0a3cf3e793", "4392871a609ca398",
    "5566ab2efadbfb72", "5e4cc06d5235b3c8", "655551db4bbbd720", "6857410b2bbd61cd", "6d464a8d9c99158b",
    "707f18ce1d836480", "720a1a2e618fe5eb", "7238fc9fecd1a1fc", "78b24e95189353e4", "8af4d7d8944c0f4e",
    "8c73dc9d27edb52b", "8f25add485c2ce3d", "98975e9a34860d33", "a9a6ab1f63db63b8", "b0c4b6fd174262a3",
    "b5db3a3318c2086e", "b75254b84e96d106", "b78e5544a4e4869d", "bf009913eef5f0ce", "c34bda5f90d8878a",
    "c5a3dca0f0e82fd0", "d97ee06038d15d20", "dc7d5707b8426927", "e01048ec7cfc9509", "e0bbddfedf8d3be0",
    "e5e8080eb433a0cd", "e69a03f75a6ff894", "eb796dbe93c8771b", "efbb79a212d8cbf7", "f75a6e19f096f31b",
)

_TELECOM_GPT4O = (
    "102df4d2143c0b84", "1560dce84ef1cd8b", "2d8ea7d18a4587a1", "32a7cdb6f049d47e", "36e28803f41d1d9a",
    "3969cee7f70f5451", "3a5b3aae5cebbbe6", "419fc5b7666965fa", "4f721e9b24637178", "5635a82e638f418a",
    "588c41900f207c65", "6af5fda54ad6cfd8", "6c56d0bffb06ca7c", "8730728c150bf01b", "8b48c7287925deaa",
    "8caf6cdb67bd0e55", "8fcc8fdcdf54def6", "a038ad95673cd938", "e8bb4747c0ac33eb", "fa5d5f758b6b228c",
)

_AIRLINE_GPT41 = (
    "2c624232cdd22177", "35135aaa6cc23891", "3fdba35f04dc8c46", "4ec9599fc203d176", "5f9c4ab08cac7457",
    "624b60c58c9d8bfb", "71ee45a3c0db9a98", "785f3ec7eb32f30b", "7a61b53701befdae", "811786ad1ae74adf",
    "9400f1b21cb527d7", "98010bd9270f9b10", "9f14025af0065b30", "b17ef6d19c7a5b1e", "b7a56873cd771f2c",
    "c2356069e9d1e79c", "d4735e3a265e16ee", "e29c9c180c6279b0", "e7f6c011776e8db7", "eb1e33e8a81b697b",
)

_AIRLINE_ALL = tuple(id_hash(str(i)) for i in range(50))
"""All 50 airline tasks (ids ``0`` … ``49``): the leaderboard submissions' files hold every one of them."""

_DEV_CONVERSATIONS = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44")


def _tau2_dev(stem: str, title: str, keep: tuple[str, ...], sha256: str, size: int, *,
              folder: str = _TAU2_RESULTS, commit: str = "59d0fb96", path: str | None = None,
              note: str = _TAU2_NOTE) -> DatasetEntry:
    """A tau2-bench development split ``tau2-bench/<stem>.json``, derived from the file of that name at the source
    (or from the file at ``path``, a path in the repository, when the source file has another name)."""
    return DatasetEntry(
        name=f"tau2-{stem.replace('_', '-')}-dev", format="tau2-bench", filename=f"tau2-bench/{stem}.json",
        title=title, source=Source(TAU2_BENCH, path or f"{folder}/{stem}.json", commit, note=note), licence="MIT",
        split=Split("tau2-bench", keep=keep), sha256=sha256, size=size)


def _tau2_submission(stem: str, title: str, submission: str, sha256: str, size: int, *,
                     commit: str) -> DatasetEntry:
    """A tau2-bench airline development split ``tau2-bench/<stem>.json``: a leaderboard submission's trajectory
    file (``submission`` is its path under the submissions folder), all 50 tasks."""
    return _tau2_dev(stem, title, _AIRLINE_ALL, sha256, size, commit=commit,
                     path=f"{_TAU2_SUBMISSIONS}/{submission}", note=_TAU2_SUBMISSION_NOTE)


def _tau2_sample(stem: str, title: str, keep: tuple[str, ...], sha256: str, size: int) -> DatasetEntry:
    """A sample ``tau2-bench/<stem>.sample.json`` of the development split of the same stem."""
    name = f"tau2-{stem.replace('_', '-')}"
    return DatasetEntry(
        name=f"{name}-sample", format="tau2-bench", filename=f"tau2-bench/{stem}.sample.json", title=title,
        split=Split("tau2-bench", keep=keep), sample_of=f"{name}-dev", licence="MIT", sha256=sha256, size=size)


ENTRIES: tuple[DatasetEntry, ...] = (
    DatasetEntry(
        name="tau-bench-airline-dev", format="tau-bench", filename="tau-bench/gpt-4o-airline.dev.json",
        title="tau-bench airline, GPT-4o historical trajectories: 30 tasks × 4 trials",
        source=Source(TAU_BENCH, "historical_trajectories/gpt-4o-airline.json",
                      "7362a1708d720a4d697d042f21fd8637ea144c3b"), licence="MIT",
        split=Split("json-list", key="task_id", keep=tuple(str(i) for i in range(30))),
        sha256="317566a848716f1348cc87c9d31c8dfdb1b884aef71cf6f2145e8db88cc951d0", size=2366277),
    DatasetEntry(
        name="reflexion-hotpotqa-dev", format="reflexion-hotpotqa",
        filename="reflexion-hotpotqa/100_questions_7_trials.dev.txt",
        title="Reflexion ReAct agents on HotpotQA, 7 trials: 49 of the 100 questions",
        source=Source("noahshinn/reflexion", "hotpotqa_runs/root/ReAct/reflexion/100_questions_7_trials.txt",
                      "e531a5c0d67bc8969683d0f6fd2ffc080a5c529d"), licence="MIT (HotpotQA text: CC BY-SA 4.0)",
        split=Split("reflexion-hotpotqa", keep=_REFLEXION_DEV),
        sha256="356deeb5c92cbdf6b161d96e19b4334abe49391ff37c9c79af1808b3bfb09635", size=1067255),
    DatasetEntry(
        name="locomo-dev", format="locomo", filename="locomo/locomo10.dev.json",
        title="LoCoMo long conversations with evidence-labelled questions: 6 of the 10 conversations",
        source=Source("snap-research/LoCoMo", "data/locomo10.json", "e130f7ad198c5520c181b2f7488c7d66ee62feff"),
        licence="CC BY-NC 4.0 (non-commercial)",
        split=Split("json-list", key="sample_id", keep=_DEV_CONVERSATIONS),
        sha256="335867eccf6867925fae324d28cf2510086f928b73bedefdb19ffa6933fecd8d", size=1288580),
    DatasetEntry(
        name="conflict-pairs-dev", format="conflict-pairs", filename="conflict-pairs/pairs.dev.jsonl",
        title="hand-labelled rule pairs, contradiction or not: 20 conflicting, 20 compatible",
        split=Split("jsonl", key="id", keep=tuple(f"cp{i:03d}" for i in range(40))),
        sha256="0c86cabf2089b13096b4e623cc9880ee7e17c8265a476992421e04bbedc9f2ed", size=9927,
        licence="the project's own (written and labelled for it)"),
    _tau2_dev("telecom_gpt-4.1", "tau2-bench telecom, gpt-4.1 agent: 40 tasks, 1 trial", _TELECOM_GPT41,
              "72fa1a9c3488e6338c41a1fee98fe6aa48827ce195e14df354385dd6ac6285fa", 2726345),
    _tau2_dev("telecom_sft-gpt-4.1", "tau2-bench telecom, fine-tuned gpt-4.1 agent: the same 40 tasks, 1 trial",
              _TELECOM_GPT41, "fa6844eb0ed665cd106dfe14e5885e7b0e0fc13fa633494e80ed3be65f5b4ad5", 3089325),
    _tau2_dev("telecom_gpt-4o", "tau2-bench telecom, gpt-4o agent: 20 other tasks, 1 trial", _TELECOM_GPT4O,
              "cc7c895e289bfd2adac0cafa3356c4d6c1f441d57b6b1f5612cbb4ed6e3995cd", 865578,
              folder=_TAU2_SIMULATIONS, commit="8d9b5076"),
    _tau2_dev("airline_gpt-4.1", "tau2-bench airline, gpt-4.1 agent: 20 tasks, 1 trial", _AIRLINE_GPT41,
              "57f7bba1fd0366019867f5c0af877e73b98e68040e36d0e7b064df7f7bb1c289", 796333),
    _tau2_dev("airline_sft-gpt-4.1", "tau2-bench airline, fine-tuned gpt-4.1 agent: the same 20 tasks, 1 trial",
              _AIRLINE_GPT41, "9f5e408db0fd8681e0fd07bdf62295c102244645af86314d523db7339cae6516", 822768),
    _tau2_submission("airline_gpt-4.1-mini",
                     "tau2-bench airline, gpt-4.1-mini agent (leaderboard submission, toolorchestra): all 50 tasks, "
                     "1 trial", "toolorchestra_nvidia_2025-12-02/trajectories/toolorchestra_airline_gpt-5_1trial.json",
                     "dded382219e6f7304a5455903dd2c89414632693cd235cb2ee609aa6c7cd60bc", 1706580, commit="633a3169"),
    _tau2_submission("airline_gpt-oss-120b",
                     "tau2-bench airline, gpt-oss-120b agent (leaderboard submission, a LangChain agent; gpt-oss-120b "
                     "user simulator): all 50 tasks, 1 trial",
                     "gpt-oss-120b_openai_2025-11-26/trajectories/langchain_agent_airline_2025-11-26_00-37-06.json",
                     "b6e7ee5cb6d67037d62d513dabb4717a17c3aa7d87caae014c214b4d62593c04", 2257329, commit="52a4ed7b"),
    _tau2_submission("airline_claude-sonnet-4-5",
                     "tau2-bench airline, claude-sonnet-4-5 agent (leaderboard submission, aide-platform): all 50 "
                     "tasks, 1 trial", "claude-sonnet-4-5_aide-platform_2025-10-31/trajectories/"
                     "claude-sonnet-4-5_airline_default_gpt4.1_1trials.json",
                     "aca69dd3e28e216e35d2ee484d8f289ed2110f1b2ba400bee13c61118ca1690e", 2913518, commit="921a1cb8"),
    _tau2_submission("airline_claude-opus-4-6",
                     "tau2-bench airline, claude-opus-4-6 agent (leaderboard submission, distyl-ai): all 50 tasks, "
                     "1 trial", "button-claude-opus-4-6_distyl-ai_2026-03-04/trajectories/airline.json",
                     "c597a057a4b4e7c9f04a9d0bd730a3309d9929bdba36a9eabee3f891ffd3d671", 2083649, commit="dfdc3f7b"),
)

_REFLEXION_SAMPLE = ("08a1c64e29ebf8fe", "296524ff85477e30", "3912540421f6dea5", "4e092e4f15737184",
                     "670c5037706fdc54", "89440f38ad317729")
"""The first 6 development questions, in order of first appearance, that the agent attempted more than once."""
_TELECOM_SAMPLE = ("34eff2ba1c9e46e0", "a9a6ab1f63db63b8", "b78e5544a4e4869d", "bf009913eef5f0ce", "eb796dbe93c8771b")
"""The first 5 tasks of ``tasks[]`` of the gpt-4.1 telecom file (the fine-tuned agent's file has the same tasks)."""
_AIRLINE_SAMPLE = ("2c624232cdd22177", "3fdba35f04dc8c46", "b17ef6d19c7a5b1e", "d4735e3a265e16ee", "e7f6c011776e8db7")
"""The first 5 tasks of ``tasks[]`` of the gpt-4.1 airline file (every other airline file holds them too)."""

SAMPLES: tuple[DatasetEntry, ...] = (
    DatasetEntry(
        name="tau-bench-airline-sample", format="tau-bench", filename="tau-bench/gpt-4o-airline.sample.json",
        title="tau-bench airline: tasks 0–4 of the development split, 4 trials each",
        split=Split("json-list", key="task_id", keep=("0", "1", "2", "3", "4")), sample_of="tau-bench-airline-dev",
        licence="MIT",
        sha256="f2b7db88d132b2ec3b5aa398f5c371e052cb71b90547736d0a50ddf4c9748d36", size=469289),
    DatasetEntry(
        name="reflexion-hotpotqa-sample", format="reflexion-hotpotqa",
        filename="reflexion-hotpotqa/100_questions_7_trials.sample.txt",
        title="Reflexion HotpotQA: 6 development questions the agent attempted more than once, all 7 trials",
        split=Split("reflexion-hotpotqa", keep=_REFLEXION_SAMPLE), sample_of="reflexion-hotpotqa-dev",
        licence="MIT (HotpotQA text: CC BY-SA 4.0)",
        sha256="793a954243f8341914d65a535ed501e20a8d217875cb3e7beba4b06bdfa87b6e", size=154901),
    DatasetEntry(
        name="locomo-sample", format="locomo", filename="locomo/locomo10.sample.json",
        title="LoCoMo: conversation conv-30 (the shortest development conversation)",
        split=Split("json-list", key="sample_id", keep=("conv-30",)), sample_of="locomo-dev",
        licence="CC BY-NC 4.0 (non-commercial)",
        sha256="a02f76f8731031cbfc7c9dfe0cfebbef45002d076efa5f7ba586eae0b5cfc208", size=123131),
    DatasetEntry(
        name="conflict-pairs-sample", format="conflict-pairs", filename="conflict-pairs/pairs.sample.jsonl",
        title="hand-labelled rule pairs: the first development pair of each kind (4 conflicting, 5 compatible)",
        split=Split("jsonl", key="id", keep=("cp000", "cp004", "cp008", "cp012", "cp020", "cp021", "cp025", "cp036",
                                             "cp038")), sample_of="conflict-pairs-dev",
        licence="the project's own (written and labelled for it)",
        sha256="d3ef711392b6bc15d7259341a3d4bb5202edc389a3aeab92ae65e19d17c2b1e5", size=2397),
    _tau2_sample("telecom_gpt-4.1", "tau2-bench telecom, gpt-4.1 agent: 5 tasks", _TELECOM_SAMPLE,
                 "701911beb7d54979b7f4d2bf3ff72ded3df32fd9a07964d1a1752aa10f8d97a7", 343731),
    _tau2_sample("telecom_sft-gpt-4.1", "tau2-bench telecom, fine-tuned gpt-4.1 agent: the same 5 tasks",
                 _TELECOM_SAMPLE, "3864f04a3dcc81aa02b82871f64a9c6d92bc930a364682f37e8dbf1aa244945d", 434159),
    _tau2_sample("airline_gpt-4.1", "tau2-bench airline, gpt-4.1 agent: 5 tasks", _AIRLINE_SAMPLE,
                 "4bd6ee6afc031230cb68c8751be781bb9728ccf57f15066c3ecb153468ec028b", 190323),
    _tau2_sample("airline_sft-gpt-4.1", "tau2-bench airline, fine-tuned gpt-4.1 agent: the same 5 tasks",
                 _AIRLINE_SAMPLE, "5f0b8b080c640783acaab4d5bb22ce33af1968b2444bdd8cbf9c13ad85d0f128", 179127),
    _tau2_sample("airline_gpt-4.1-mini", "tau2-bench airline, gpt-4.1-mini agent: the same 5 tasks", _AIRLINE_SAMPLE,
                 "f5d5632896af8cc6f18bf93fff3d60a92d22d6ccc4232ffba8cac3dfd278bf67", 169241),
    _tau2_sample("airline_gpt-oss-120b", "tau2-bench airline, gpt-oss-120b agent: the same 5 tasks", _AIRLINE_SAMPLE,
                 "51131da67b42c8503da070234ef86ff52a517d57aafa81b22e6451f4e02c6f34", 207877),
    _tau2_sample("airline_claude-sonnet-4-5", "tau2-bench airline, claude-sonnet-4-5 agent: the same 5 tasks",
                 _AIRLINE_SAMPLE, "d4b27d587695fc4bf215df8340363293103426f99c5f64a5b3ad3df43b6d80a9", 239196),
    _tau2_sample("airline_claude-opus-4-6", "tau2-bench airline, claude-opus-4-6 agent: the same 5 tasks",
                 _AIRLINE_SAMPLE, "21aecb0d27250226d54557ec4b0effbfebcd62ce10ca06370d81dea43b729724", 175838),
)

GROUPS: dict[str, tuple[str, ...]] = {
    "tau2-telecom-cross-dev": ("tau2-telecom-gpt-4.1-dev", "tau2-telecom-sft-gpt-4.1-dev"),
    "tau2-airline-cross-dev": ("tau2-airline-gpt-4.1-dev", "tau2-airline-sft-gpt-4.1-dev",
                               "tau2-airline-gpt-4.1-mini-dev", "tau2-airline-gpt-oss-120b-dev",
                               "tau2-airline-claude-sonnet-4-5-dev", "tau2-airline-claude-opus-4-6-dev"),
    "tau2-telecom-cross-sample": ("tau2-telecom-gpt-4.1-sample", "tau2-telecom-sft-gpt-4.1-sample"),
    "tau2-airline-cross-sample": ("tau2-airline-gpt-4.1-sample", "tau2-airline-sft-gpt-4.1-sample",
                                  "tau2-airline-gpt-4.1-mini-sample", "tau2-airline-gpt-oss-120b-sample",
                                  "tau2-airline-claude-sonnet-4-5-sample", "tau2-airline-claude-opus-4-6-sample"),
}
"""Cross-agent replays: several agents' runs of the same tasks, one file after another.

Telecom: the base gpt-4.1 agent's runs, then the fine-tuned agent's runs of the same 40 tasks. Airline: six agents
in this order — gpt-4.1 and the fine-tuned gpt-4.1 (the same 20 tasks), then gpt-4.1-mini, gpt-oss-120b,
claude-sonnet-4-5 and claude-opus-4-6 (leaderboard submissions, all 50 tasks): 240 episodes over 50 tasks, each
task run by 4 to 6 agents. The samples keep the same 5 airline tasks in every file."""
