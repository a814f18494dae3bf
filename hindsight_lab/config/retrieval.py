"""Recall: the recall paths, the rerank and its weights, the task-type classifier and the injection budget."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .base import RECALL, Section, affects


class WeightsConfig(Section):
    """Rerank weights, one per term of the rerank under the term's name, and the redundancy penalty:
    ``score = Σ_t w_t·feature_t − w_redundancy·redundancy`` over the features of
    :data:`hindsight_lab.retrieve.features.FEATURES` (a term is its feature there and its weight here; a test
    checks that the two name the same terms)."""

    semantic: float = Field(0.5, ge=0, json_schema_extra=affects(RECALL))
    """w1: cosine similarity to the query, clipped to [0, 1]."""
    lexical: float = Field(0.2, ge=0, json_schema_extra=affects(RECALL))
    """w2: BM25 score of the record's matched text for the query, scaled to [0, 1] (``retrieval.lexical_scale``)."""
    task_type: float = Field(0.6, ge=0, json_schema_extra=affects(RECALL))
    """w3: 1 when the record's task_type equals the query's (given or inferred), else 0."""
    task_type_p: float = Field(0.0, ge=0, json_schema_extra=affects(RECALL))
    """The graded task-type term: the classifier's probability of each type times its overlap with the record's
    type (composite types count in part), so a guess weighs as much as the classifier is sure of it."""
    confidence: float = Field(0.05, ge=0, json_schema_extra=affects(RECALL))
    """w4: the record's confidence."""
    recency: float = Field(0.05, ge=0, json_schema_extra=affects(RECALL))
    """w5: ``0.5 ** (age / half_life)``, age from last_confirmed_at else created_at."""
    episode: float = Field(0.0, ge=0, json_schema_extra=affects(RECALL))
    """1 for an episode record, 0 for a candidate or rule: what happened against what a reflection concluded."""
    fused: float = Field(0.0, ge=0, json_schema_extra=affects(RECALL))
    """Reciprocal rank fusion of the cosine and BM25 orders among the candidates (``1/(60 + rank)`` each), scaled to
    [0, 1]: the two retrievers' agreement without a scale between their scores."""
    redundancy: float = Field(0.1, ge=0, json_schema_extra=affects(RECALL))
    """w6: penalty on the highest similarity to a record already selected (greedy, MMR-style)."""


class ClassifierConfig(Section):
    """The light task-type classifier used when a query comes without task_type, trained on stored episodes (each
    labelled with the task type derived from its tools); it abstains when unsure. The defaults (``embedding``,
    ``successes``, ``intent``, ``instance_blind``, with a task-type weight of 0.6) are the config chosen by the
    cross-validated selection ``experiments/default_selection_lures.yaml``, and ``contrast`` the one chosen by
    ``experiments/default_selection_contrast.yaml``; the earlier default, a ``knn`` vote weighed 0.2, is
    ``experiments/configs/knn-default.yaml`` (README, "Choosing the default config")."""

    enabled: bool = Field(True, json_schema_extra=affects(RECALL))
    """Infer the query's task_type when the caller gives none."""
    method: Literal["knn", "logistic", "embedding"] = Field("embedding", json_schema_extra=affects(RECALL))
    """``knn``: a similarity-weighted vote of the ``k`` nearest stored episodes (the vector path's neighbours);
    ``logistic``: logistic regression over TF-IDF of the stored instructions with names, places, numbers and
    e-mail addresses masked (:mod:`hindsight_lab.retrieve.classify`); ``embedding``: logistic regression over the
    sentence embeddings of those masked instructions, with each task type also described by the words of its
    tools (``describe_weight``; the masked query is embedded in the query's encoder pass). ``knn`` votes by the
    similarity of whole instructions, names and numbers included; ``logistic`` and ``embedding`` see them masked,
    so a request about the same customer as another kind of task is not drawn to that task's type (the README's
    replay figures compare the methods)."""
    learn_from: Literal["all", "successes", "not_strategy"] = Field("successes",
                                                                     json_schema_extra=affects(RECALL))
    """The stored episodes it learns from (``knn``: the neighbours that vote): ``all``, only ``successes``, or
    ``not_strategy``: the successes and the failures caused outside the agent (``failure_cause: external``, an
    outage). A failed run's derived task type is what its agent did, not what the task needed: where an agent's
    default path skips a step, its failures share one truncated type that can outvote the runs that succeeded
    (``successes`` leaves them out); where the failed trials of a task fail alike, they still carry the task's
    signal (``all`` keeps it). A run cut short by an outage did what its agent chose up to the failing call, and
    nothing says that choice was wrong, so ``not_strategy`` learns from it as from a success."""
    max_per_type: int = Field(50, ge=1, json_schema_extra=affects(RECALL))
    """``logistic``, ``embedding``: the newest episodes of each task type it learns from."""
    describe_weight: float = Field(10.0, ge=0, json_schema_extra=affects(RECALL))
    """``embedding``: sample weight of each task type's description (the words of the tools its stored episodes
    called) as a training example; 0 leaves descriptions out."""
    k: int = Field(10, ge=1, json_schema_extra=affects(RECALL))
    """``knn``: nearest episodes that vote."""
    min_votes: int = Field(2, ge=1, json_schema_extra=affects(RECALL))
    """Abstain unless the winning task_type has at least this many stored examples (``knn``: among the voters)."""
    min_share: float = Field(0.3, ge=0, le=1, json_schema_extra=affects(RECALL))
    """Abstain unless the winning task_type's probability (``knn``: share of the vote weight) is above this."""
    intent: bool = Field(True, json_schema_extra=affects(RECALL))
    """``logistic``, ``embedding``: a stored episode also matches the query's task type when the classifier gives its
    own request (masked) that type, not only when its run derived it. The type a run derives is what its agent did;
    the request says what was wanted: a retry of the same request whose agent went another way still matches, a
    request about the same names that wanted something else does not."""
    intent_match: Literal["same", "no_conflict"] = Field("same", json_schema_extra=affects(RECALL))
    """With ``intent``, what the task-type term asks of a stored episode's request: ``same``, that the classifier
    give it the query's type (or its run derived that type); ``no_conflict``, only that the classifier not surely
    give it another type — a request it abstains on keeps the benefit of the doubt, as do rules and candidates,
    whose requests it does not type. A paraphrase the classifier cannot place is then not pushed down, while a
    request about the same names that surely wanted something else still is."""

    instance_blind: bool = Field(True, json_schema_extra=affects(RECALL))
    """``logistic``, ``embedding``: type a query without the stored requests about the same instance (the same
    names, numbers and identifiers) that asked for something else. Such a request shares the query's words whatever
    it asked, which is what makes a lexical lure; whether it asked the same is read without that instance, by the
    wording of the others. Those that asked the same are kept: what they came to for this very instance is the best
    evidence (:mod:`hindsight_lab.retrieve.classify`)."""

    contrast: bool = Field(True, json_schema_extra=affects(RECALL))
    """With ``instance_blind``: also read the query by the words that set it apart from the stored requests about
    its instance (those missing from at least one of them) and keep the types that fit both readings (the product
    of the two probabilities). Two requests about one instance share its names and its description ("order 27214,
    the green grinder that … bought"); the words they do not share ("set up an exchange" against "please cancel")
    say what each asks, and a sentence embedding of the whole request weighs them little against the description.
    A retry worded alike sets nothing apart, and the query is read whole."""

    @model_validator(mode="after")
    def _intent_match_needs_intent(self) -> "ClassifierConfig":
        if self.intent_match != "same" and not self.intent:
            raise ValueError("intent_match: 'no_conflict' reads the classifier's type of each stored request, "
                             "which only intent: true computes")
        return self


class RetrievalConfig(Section):
    """Recall by four paths (vector, keyword, task type, triggers), the rerank, and the injection budget (DESIGN §3)."""

    top_k: int = Field(5, ge=1, json_schema_extra=affects(RECALL))
    """Most memories injected (triggered rules included)."""
    path_depth: int = Field(20, ge=1, json_schema_extra=affects(RECALL))
    """Records taken from each recall path before the rerank."""
    min_similarity: float = Field(0.2, ge=-1, le=1, json_schema_extra=affects(RECALL))
    """Vector-path neighbours below this cosine similarity are dropped."""
    lexical_scale: Literal["best", "query"] = Field("best", json_schema_extra=affects(RECALL))
    """What the lexical feature divides a record's BM25 score by: ``best``, the best score in the store for the
    query (some record always scores 1, however weak its match); ``query``, the score of the query itself read as a
    record (a retry worded like the query scores near 1, a record sharing only a few common words of it scores
    little). Clipped to [0, 1]."""
    min_score: float = Field(0.0, json_schema_extra=affects(RECALL))
    """Reranked results below this total score are dropped (triggered rules excepted)."""
    min_relative_score: float = Field(0.0, ge=0, le=1, json_schema_extra=affects(RECALL))
    """Early stop: results whose total score is below this fraction of the best result's are dropped (triggered
    rules excepted); 0 keeps everything up to top_k and the budget. Trades recall for injected tokens."""
    enough_score: float | None = Field(None, json_schema_extra=affects(RECALL))
    """Early stop on a sure first memory: when the best result's total score is at least this, it is injected
    alone (triggered rules excepted); None turns it off. Trades recall for injected tokens, like
    ``min_relative_score``, but by how sure the first result is rather than by the gap to the next ones."""
    max_triggered: int = Field(2, ge=0, json_schema_extra=affects(RECALL))
    """Triggered rules guaranteed a place in the result."""
    step_rules: bool = Field(False, json_schema_extra=affects(RECALL))
    """A checkable L3 rule also fires, like a trigger, when more than half of the similarity weight of the query's
    ``top_k`` nearest past runs reached the step it guards: a rule worded in tool names then reaches requests
    worded in a customer's words. Such rules take guaranteed places (``max_triggered``) from the episodes."""
    confidence_within: Literal["all", "task_type"] = Field("all", json_schema_extra=affects(RECALL))
    """What the confidence term compares: ``all``, the record's confidence as it is; ``task_type``, the record's
    confidence against the mean of the candidates of its own stored task type (``0.5 + c - mean``, clipped to
    [0, 1]), so outcomes order alike memories without lifting every memory of a task type that often succeeds
    above the memories of the query's own type."""
    type_match: Literal["exact", "contains"] = Field("exact", json_schema_extra=affects(RECALL))
    """What the task-type term asks of a record's stored type (or its request's, with ``classifier.intent``):
    ``exact``, the query's type itself; ``contains``, a type whose state-changing tools include all of the
    query type's (a derived type is the set of them, joined with ``+``): a run that did what the query's type
    does, and more, matches too."""
    token_budget: int = Field(600, ge=1, json_schema_extra=affects(RECALL))
    """Token budget of the injected memories, counted with the embedding model's tokenizer."""
    recency_half_life_days: float = Field(14.0, gt=0, json_schema_extra=affects(RECALL))
    """Half-life of the recency term, in days."""
    weights: WeightsConfig = WeightsConfig()
    """Rerank weights."""
    classifier: ClassifierConfig = ClassifierConfig()
    """Task-type inference for queries without task_type."""
    track_retrievals: bool = True
    """Update last_retrieved_at and debug_trace on every retrieval (bookkeeping; never read by ranking)."""
    debug_trace_max: int = Field(50, ge=0)
    """Entries kept in a record's debug_trace (oldest dropped first)."""

