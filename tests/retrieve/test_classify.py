"""The logistic task-type classifier: entity masking, prediction, abstention, and its use by search."""

from __future__ import annotations

import pytest

from datetime import timedelta

from hindsight_lab import LabConfig, MemorySystem
from hindsight_lab.embed import HashingEmbedder
from hindsight_lab.retrieve.classify import TaskTypeClassifier, mask_entities
from hindsight_lab.store.memory import InMemoryStore

from support import T0, episode

REFUNDS = ["Refund order 4821 for Alice Chen in Denver, the lamp arrived broken",
           "Give Bob Ruiz from Porto his money back for order 77, the mug was cracked",
           "Please refund the damaged desk on order 5310 for Chloe Berg"]
ADDRESSES = ["Change the delivery address of Alice Chen in Denver to 12 Oak Street",
             "Bob Ruiz moved from Porto; update the shipping address on his account",
             "Update the address for Chloe Berg to her new flat"]


def test_mask_entities_hides_names_numbers_and_emails_but_not_sentence_starts():
    assert mask_entities("Refund order 4821 for Alice Chen (alice@example.com) in Denver.") == \
        "Refund order <num> for <name> <name> (<email>) in <name>."
    assert mask_entities("I want to cancel. My name is Bob.") == "I want to cancel. My name is <name>."


def _trained(**kw) -> TaskTypeClassifier:
    """A classifier that learnt the refunds and the address changes."""
    clf = TaskTypeClassifier(**kw)
    for i, text in enumerate(REFUNDS):
        clf.add(f"r{i}", text, "issue_refund", float(i))
    for i, text in enumerate(ADDRESSES):
        clf.add(f"a{i}", text, "update_address", float(i))
    return clf


def test_predicts_the_wording_of_a_type_not_its_entities():
    clf = _trained(max_per_type=10, min_votes=2, min_share=0.4)
    # the same customer and city as an address change, but a refund request
    label, share = clf.predict("Alice Chen in Denver wants a refund for order 9911")
    assert label == "issue_refund" and share > 0.4
    assert clf.predict("Please update the address of Dmitri Novak")[0] == "update_address"
    # abstains when the winning share is not above min_share
    strict = TaskTypeClassifier(min_share=0.99)
    for i, text in enumerate(REFUNDS + ADDRESSES):
        strict.add(f"x{i}", text, "issue_refund" if i < 3 else "update_address", float(i))
    assert strict.predict("Alice Chen in Denver wants a refund for order 9911")[0] is None


def test_keeps_the_newest_per_type_and_forgets_removed_records():
    clf = TaskTypeClassifier(max_per_type=2, min_votes=2)
    for i, text in enumerate(REFUNDS):
        clf.add(f"r{i}", text, "issue_refund", float(i))
    assert len(clf) == 2 and set(clf._by_type["issue_refund"]) == {"r1", "r2"}  # r0 was the oldest
    assert clf.predict("refund my order")[0] == "issue_refund"  # one type only: no model needed
    clf.remove("r2")
    assert clf.predict("refund my order")[0] is None  # fewer than min_votes examples left
    clf.add("none", "no task type", None, 9.0)
    assert len(clf) == 1


def _refunds_and_addresses(method: str) -> tuple[LabConfig, MemorySystem]:
    """A store with the refunds and the address changes, its classifier ``method`` answering from 0.4."""
    cfg = LabConfig().with_params({"retrieval.classifier.method": method, "retrieval.classifier.min_share": 0.4})
    mem = MemorySystem(cfg, store=InMemoryStore(), embedder=HashingEmbedder(dim=256)).open()
    for i, text in enumerate(REFUNDS):
        mem.write_episode(episode(f"r{i}", text, ["lookup_order", "issue_refund"]), now=T0 + timedelta(hours=i))
    for i, text in enumerate(ADDRESSES):
        mem.write_episode(episode(f"a{i}", text, ["update_address"]), now=T0 + timedelta(hours=3 + i))
    return cfg, mem


def test_search_uses_the_logistic_classifier_when_configured():
    cfg, mem = _refunds_and_addresses("logistic")
    res = mem.search("Alice Chen in Denver wants a refund for order 9911", now=T0 + timedelta(days=1))
    assert (res.task_type, res.task_type_source) == ("issue_refund", "inferred")
    assert res.task_type_share > 0.4
    strict = MemorySystem(cfg.with_params({"retrieval.classifier.min_share": 0.99}), store=mem.store,
                          embedder=mem.embedder).open()
    res = strict.search("Alice Chen in Denver wants a refund for order 9911", now=T0 + timedelta(days=1))
    assert (res.task_type, res.task_type_source) == (None, "abstained")  # negative control: too unsure
    assert all(h.scores.task_type == 0.0 for h in res.hits)


PAID_BACK = ["Give Bob Ruiz his money back: the mug he received was cracked",
             "Reimburse a shopper from Porto whose lamp came broken in the parcel"]
CALLED_OFF = ["Ann changed her mind about a blender; stop the purchase before it leaves the warehouse",
              "Call off a desk purchase for a shopper in Lyon so it is never dispatched"]
REFUND_TOOLS, CANCEL_TOOLS = ["lookup_order", "issue_refund"], ["lookup_order", "cancel_order"]


def _embedding_classifier(embed, refund_tools, cancel_tools, **kw) -> TaskTypeClassifier:
    clf = TaskTypeClassifier(min_votes=1, min_share=0.0, method="embedding", embed=embed, **kw)
    for i, text in enumerate(PAID_BACK):
        clf.add(f"r{i}", text, "refund_type", float(i), tools=refund_tools)
    for i, text in enumerate(CALLED_OFF):
        clf.add(f"c{i}", text, "cancel_type", float(i), tools=cancel_tools)
    return clf


def test_embedding_method_describes_each_type_by_the_words_of_its_tools(minilm):
    query = "Refund order 4821: Ann in Lyon says the blue blender arrived damaged."
    clf = _embedding_classifier(minilm.embed, REFUND_TOOLS, CANCEL_TOOLS)
    assert clf.description("refund_type") == "issue refund lookup order"
    assert clf.predict(query)[0] == "refund_type"  # no stored instruction says "refund"; a tool name does
    # the descriptions decide: with the tool names swapped between the types, so is the prediction
    swapped = _embedding_classifier(minilm.embed, CANCEL_TOOLS, REFUND_TOOLS)
    assert swapped.predict(query)[0] == "cancel_type"
    assert TaskTypeClassifier(method="embedding", embed=minilm.embed).predict(query) == (None, 0.0)  # nothing stored


def test_embedding_method_needs_an_embedder_and_a_known_method():
    import pytest

    with pytest.raises(ValueError, match="embed function"):
        TaskTypeClassifier(method="embedding")
    with pytest.raises(ValueError, match="method"):
        TaskTypeClassifier(method="svm")


def test_search_uses_the_embedding_classifier_and_relearns_after_reembed():
    _, mem = _refunds_and_addresses("embedding")
    query = "Alice Chen in Denver wants a refund for order 9911"
    res = mem.search(query, now=T0 + timedelta(days=1))
    assert (res.task_type, res.task_type_source) == ("issue_refund", "inferred")
    assert [h.scores.task_type for h in res.hits if h.record.task_type == "issue_refund"] == [1.0] * 3
    # another embedding space: the classifier's vectors are rebuilt, not mixed with the old ones
    mem.reembed(HashingEmbedder(dim=128))
    res = mem.search(query, now=T0 + timedelta(days=1))
    assert (res.task_type, res.task_type_source) == ("issue_refund", "inferred")


def test_intents_give_each_text_the_type_predict_gives_it():
    clf = _trained(max_per_type=10, min_votes=2, min_share=0.4)
    texts = ["Alice Chen in Denver wants a refund for order 9911", "Please update the address of Dmitri Novak",
             "weather"]
    assert clf.intents(texts) == [clf.predict(t)[0] for t in texts]
    assert clf.intents(texts)[:2] == ["issue_refund", "update_address"]
    assert clf.intents([]) == []


def test_with_intent_a_retry_whose_run_went_another_way_matches_the_query_type():
    # a failed run of an address change whose agent issued a refund derives the refund type from its run; by its
    # request it is an address change, as the query is (the classifier learns from successes: what a task needed)
    cfg, mem = _refunds_and_addresses("logistic")
    cfg = cfg.with_params({"retrieval.classifier.learn_from": "successes"})
    retry = "Change the delivery address of Dmitri Novak to 4 Elm Road"
    mem.write_episode(episode("retry", retry, ["lookup_order", "issue_refund"], outcome="failure"),
                      now=T0 + timedelta(hours=8))
    query = "Change the delivery address of Dmitri Novak to 4 Elm Road, please"

    def task_type_term(config: LabConfig) -> tuple[str | None, float]:
        m = MemorySystem(config, store=mem.store, embedder=mem.embedder).open()
        res = m.search(query, now=T0 + timedelta(days=1), explain=True)
        row = [i for i, r in enumerate(res.candidates.records) if r.source_episode_ids == ("retry",)][0]
        return res.task_type, float(res.candidates.raw["task_type"][row])

    control = cfg.with_params({"retrieval.classifier.intent": False})
    assert task_type_term(control) == ("update_address", 0.0)  # by its derived type, not a match
    assert task_type_term(cfg.with_params({"retrieval.classifier.intent": True})) == ("update_address", 1.0)


def test_no_conflict_gives_a_request_the_classifier_cannot_place_the_benefit_of_the_doubt():
    # two stored runs that derived the refund type: one whose request the classifier cannot place (it abstains),
    # one whose request surely asked for a refund. Asked to match the query's type (same), both miss it; asked only
    # not to conflict with it (no_conflict), the one it cannot place keeps the term, the sure refund does not
    cfg, mem = _refunds_and_addresses("logistic")
    cfg = cfg.with_params({"retrieval.classifier.min_share": 0.6, "retrieval.classifier.learn_from": "successes",
                           "retrieval.classifier.intent": True, "retrieval.min_similarity": -1.0})
    mem.write_episode(episode("vague", "Dmitri Novak called again",
                              ["lookup_order", "issue_refund"], outcome="failure"), now=T0 + timedelta(hours=8))
    mem.write_episode(episode("sure", "Refund order 12 for Dmitri Novak, the kettle leaks",
                              ["lookup_order", "issue_refund"]), now=T0 + timedelta(hours=9))

    def task_type_terms(config: LabConfig) -> dict[str, float]:
        m = MemorySystem(config, store=mem.store, embedder=mem.embedder).open()
        res = m.search("Change the delivery address of Dmitri Novak to 4 Elm Road, please",
                       now=T0 + timedelta(days=1), explain=True)
        assert res.task_type == "update_address"
        assert m.index_.classifier.intents(["Dmitri Novak called again",
                                            "Refund order 12 for Dmitri Novak, the kettle leaks"]) == \
            [None, "issue_refund"]  # it abstains on the one and is sure of the other
        return {r.source_episode_ids[0]: float(v) for r, v in zip(res.candidates.records,
                                                                  res.candidates.raw["task_type"])}

    same = task_type_terms(cfg)
    lenient = task_type_terms(cfg.with_params({"retrieval.classifier.intent_match": "no_conflict"}))
    assert (same["vague"], same["sure"], same["a0"]) == (0.0, 0.0, 1.0)  # the control
    assert (lenient["vague"], lenient["sure"], lenient["a0"]) == (1.0, 0.0, 1.0)


def test_confidence_within_task_type_compares_a_record_with_its_own_kind():
    # the refunds all succeeded but one; the address changes all succeeded. Taken as it is, every success lifts its
    # record alike, whatever its type; within its type, only what sets a record apart from its kind counts
    cfg, mem = _refunds_and_addresses("logistic")
    cfg = cfg.with_params({"retrieval.min_similarity": -1.0})  # every stored episode is a candidate
    mem.write_episode(episode("rf", "Refund order 9 for Dmitri Novak, the kettle leaks", ["lookup_order",
                                                                                          "issue_refund"],
                              outcome="failure"), now=T0 + timedelta(hours=8))

    def confidence_term(config: LabConfig) -> dict[str, float]:
        m = MemorySystem(config, store=mem.store, embedder=mem.embedder).open()
        res = m.search("Change the address of Ana Lima to 3 Pine Road", now=T0 + timedelta(days=1), explain=True)
        return {r.source_episode_ids[0]: round(float(v), 3)
                for r, v in zip(res.candidates.records, res.candidates.raw["confidence"])}

    plain = confidence_term(cfg)
    within = confidence_term(cfg.with_params({"retrieval.confidence_within": "task_type"}))
    assert plain["a0"] == plain["r0"] > plain["rf"]  # the control: a success is a success
    assert within["a0"] == within["a1"] == 0.5  # all alike: nothing to tell them apart
    assert within["r0"] > 0.5 > within["rf"]  # a refund that failed, among refunds that succeeded
    assert round(within["r0"] - within["rf"], 3) == round(plain["r0"] - plain["rf"], 3)


def test_a_rival_added_after_the_requests_were_typed_gets_no_request_type():
    """With ``classifier.intent`` the requests of the candidates are typed in recall; a flagged rival that joins
    them afterwards (:func:`~hindsight_lab.retrieve.marks.add_partners`) has no request type of its own and is
    matched by its stored type alone (it used to leave the list of request types one short: IndexError)."""
    import numpy as np

    from hindsight_lab.retrieve.features import raw_features
    from hindsight_lab.retrieve.recall import Candidates
    from hindsight_lab.types import Kind, MemoryRecord

    cands = Candidates(task_type="issue_refund")
    emb = np.zeros(4, dtype=np.float32)
    cands.add(MemoryRecord("epis-1", Kind.EPISODE, "a", task_type="update_address"), emb, 0.5, 0.0, "vector", None)
    cands.intents = ["issue_refund"]  # its request asked for a refund, though its run went another way
    cands.add(MemoryRecord("rule-1", Kind.RULE, "b", task_type="issue_refund"), emb, 0.4, 0.0, "conflict", None)
    cands.add(MemoryRecord("rule-2", Kind.RULE, "c", task_type="cancel_order"), emb, 0.3, 0.0, "conflict", None)
    assert cands.intents == ["issue_refund", None, None]
    assert raw_features(cands, T0)["task_type"].tolist() == [1.0, 1.0, 0.0]


def test_a_store_with_many_types_of_few_examples_fits_without_sklearn_warnings() -> None:
    """More types than half the examples is still a classification: the fit says nothing (sklearn would warn on
    every refit, and a sweep refits thousands of times)."""
    import warnings

    clf = TaskTypeClassifier(min_votes=1)
    for i in range(30):
        clf.add(f"r{i}", f"please handle request number {i} about item {i}", f"type{i % 20}", float(i))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        label, share = clf.predict("please handle request number 3 about item 3")
    assert 0.0 < share <= 1.0


CANCELS = ["Cancel order 318 for Dana Wu in Lyon before it ships",
           "Stop the purchase of Eve Moss from Oslo, order 992, she changed her mind",
           "Please cancel the chair on order 4410 for Finn Hale"]
LURE = "Cancel the blue lamp on order 6120 for Gina Park in Rome, it is no longer needed"
REFUND_LIKE_THE_LURE = "Refund the blue lamp on order 6120 for Gina Park in Rome, it is broken"


def _with_a_lure(instance_blind: bool, lure: str = LURE, lure_type: str = "cancel") -> TaskTypeClassifier:
    """Refunds and cancellations of other customers, and one request (``lure``, a cancellation unless said
    otherwise) about the query's customer, order and city."""
    clf = TaskTypeClassifier(min_votes=1, min_share=0.0, instance_blind=instance_blind)
    for i, text in enumerate(REFUNDS):
        clf.add(f"r{i}", text, "refund", float(i))
    for i, text in enumerate(CANCELS):
        clf.add(f"c{i}", text, "cancel", float(i))
    clf.add("lure", lure, lure_type, 9.0)
    return clf


def test_instance_blind_types_a_query_without_the_requests_about_its_instance():
    # the query shares the lure's words and its customer, order and city: read with the lure, it is a cancellation
    assert _with_a_lure(False).predict(REFUND_LIKE_THE_LURE)[0] == "cancel"  # the control
    blind = _with_a_lure(True)
    assert blind.predict(REFUND_LIKE_THE_LURE)[0] == "refund"
    # the same wording about another customer leaves nothing out: the lure is then another instance's request,
    # and it is the wording that decides, as without instance_blind
    other = REFUND_LIKE_THE_LURE.replace("6120", "7777").replace("Gina Park", "Hugo Lind").replace("Rome", "Oslo")
    assert blind.probabilities(other) == _with_a_lure(False).probabilities(other)
    assert blind.predict(other)[0] == "cancel"
    # after a change the models fitted without some examples are fitted again, not reused
    blind.add("c9", "Please cancel the kettle on order 5150 for Ines Roy", "cancel", 10.0)
    again = _with_a_lure(True)
    again.add("c9", "Please cancel the kettle on order 5150 for Ines Roy", "cancel", 10.0)
    assert blind.probabilities(REFUND_LIKE_THE_LURE) == again.probabilities(REFUND_LIKE_THE_LURE)
    assert blind.probabilities(REFUND_LIKE_THE_LURE) != _with_a_lure(True).probabilities(REFUND_LIKE_THE_LURE)


def test_instance_blind_keeps_the_requests_about_its_instance_that_ask_what_it_asks():
    # read without the instance, the lure asks for a cancellation and the retry for a refund, as the query does:
    # the lure is left out, the retry kept
    blind = _with_a_lure(True)
    retry = "Give the money back for the blue lamp on order 6120, Gina Park in Rome says it is broken"
    blind.add("retry", retry, "refund", 10.0)
    without_the_lure = _with_a_lure(False)
    without_the_lure.remove("lure")
    without_the_lure.add("retry", retry, "refund", 10.0)
    assert blind.probabilities(REFUND_LIKE_THE_LURE) == without_the_lure.probabilities(REFUND_LIKE_THE_LURE)
    left_out_too = _with_a_lure(False)
    left_out_too.remove("lure")
    assert blind.probabilities(REFUND_LIKE_THE_LURE) != left_out_too.probabilities(REFUND_LIKE_THE_LURE)


def test_instance_blind_learns_what_a_same_request_about_the_instance_came_to():
    # an earlier run of the query's request ended in a refusal (what that instance needed), although its words ask
    # for a cancellation like other instances' requests: it asks what the query asks, so it is kept and the query
    # is read as a refusal, as without instance_blind
    def trained(instance_blind: bool) -> TaskTypeClassifier:
        return _with_a_lure(instance_blind, "Please cancel the blue lamp on order 6120 for Gina Park in Rome",
                            "refused")

    query = "I would like to cancel the blue lamp on order 6120 for Gina Park in Rome"
    assert trained(False).predict(query)[0] == "refused"  # the control
    assert trained(True).predict(query)[0] == "refused"
    assert trained(True).probabilities(query) == trained(False).probabilities(query)


def test_the_classifier_learns_a_stored_request_without_its_tools_line():
    # a query is a request alone: the classifier learns the requests as the store keys them, less the tool names
    # (those teach it through each type's description)
    cfg, mem = _refunds_and_addresses("logistic")
    assert cfg.episode.key == "request_tools"
    texts = [text for examples in mem.index_.classifier._by_type.values() for _, text in examples.values()]
    assert len(texts) == 6 and not any("Tools:" in t or "issue_refund" in t for t in texts)


def test_search_types_the_query_instance_blind_when_configured():
    cfg = LabConfig().with_params({"retrieval.classifier.method": "logistic", "retrieval.classifier.min_share": 0.0,
                                   "retrieval.classifier.min_votes": 1})
    mem = MemorySystem(cfg, store=InMemoryStore(), embedder=HashingEmbedder(dim=256)).open()
    for i, text in enumerate(REFUNDS):
        mem.write_episode(episode(f"r{i}", text, REFUND_TOOLS), now=T0 + timedelta(hours=i))
    for i, text in enumerate([*CANCELS, LURE]):
        mem.write_episode(episode(f"c{i}", text, CANCEL_TOOLS), now=T0 + timedelta(hours=3 + i))

    def inferred(config: LabConfig) -> str | None:
        return MemorySystem(config, store=mem.store, embedder=mem.embedder).open().search(
            REFUND_LIKE_THE_LURE, now=T0 + timedelta(days=1)).task_type

    assert inferred(cfg.with_params({"retrieval.classifier.instance_blind": False})) == "cancel_order"  # the control
    assert inferred(cfg.with_params({"retrieval.classifier.instance_blind": True})) == "issue_refund"
    for contrast in (False, True):  # the contrastive reading is the config's
        config = cfg.with_params({"retrieval.classifier.contrast": contrast})
        assert MemorySystem(config, store=mem.store, embedder=mem.embedder).open().index_.classifier.contrast \
            is contrast


def test_a_model_without_a_few_examples_starts_from_the_whole_sets_and_reaches_the_same_optimum():
    # instance-blind typing fits a model without the requests about the query's instance; it starts from the whole
    # set's solution (warm start), which must change the iterations, not the model
    import numpy as np

    embed = HashingEmbedder(dim=256).embed
    warm = _embedding_classifier(embed, REFUND_TOOLS, CANCEL_TOOLS)
    left_out = frozenset({"r0", "c1"})
    full, without = warm._fitted(), warm._model_without(left_out)
    cold = _embedding_classifier(embed, REFUND_TOOLS, CANCEL_TOOLS)
    for rid in left_out:
        cold.remove(rid)
    reference = cold._fitted()  # nothing to start from: a cold fit of the same examples
    texts = [*PAID_BACK, *CALLED_OFF, "Alice Chen in Denver wants a refund for order 9911"]
    features = warm._vectorise([mask_entities(t) for t in texts])
    assert np.allclose(without.predict_proba(features), reference.predict_proba(features), atol=2e-3)
    assert not np.allclose(without.predict_proba(features), full.predict_proba(features), atol=2e-3)  # it refitted
    assert without.n_iter_[0] < reference.n_iter_[0]


def test_intent_types_only_the_requests_whose_run_derived_another_type(monkeypatch):
    # an episode whose run derived the query's type matches it whatever its request says: its request is not typed
    cfg, mem = _refunds_and_addresses("logistic")
    mem = MemorySystem(cfg.with_params({"retrieval.classifier.intent": True}), store=mem.store,
                       embedder=mem.embedder).open()
    clf = mem.index_.classifier
    asked: list[str] = []
    typed = clf.intents
    monkeypatch.setattr(clf, "intents", lambda texts: asked.extend(texts) or typed(texts))
    res = mem.search("Alice Chen in Denver wants a refund for order 9911", now=T0 + timedelta(days=1))
    assert res.task_type == "issue_refund"
    assert asked and all(t in ADDRESSES for t in asked), asked  # the address changes only, not the refunds
    assert [h.scores.task_type for h in res.hits if h.record.task_type == "issue_refund"] == [1.0] * 3


def test_a_model_without_a_few_examples_fits_on_the_whole_sets_rows_without_theirs():
    # the rows of the whole set are stacked once; a model without a few examples drops their rows, and the tool
    # description of a type none of whose examples is kept
    import numpy as np

    embed = HashingEmbedder(dim=256).embed
    clf = _embedding_classifier(embed, REFUND_TOOLS, CANCEL_TOOLS)
    clf.add("x0", "Book a table for two at the harbour restaurant", "book_type", 9.0, tools=["book_table"])
    clf._fitted()
    every_cancel = frozenset(f"c{i}" for i in range(len(CALLED_OFF)))
    features, labels, weights = clf._design.without(every_cancel | {"r0"})
    assert sorted(set(labels)) == ["book_type", "refund_type"]  # the cancel type's description went too
    assert len(labels) == (len(PAID_BACK) - 1) + 1 + 2 and list(weights).count(clf.describe_weight) == 2
    # the same model as one fitted from scratch on a classifier that never stored them
    fresh = _embedding_classifier(embed, REFUND_TOOLS, CANCEL_TOOLS)
    fresh.add("x0", "Book a table for two at the harbour restaurant", "book_type", 9.0, tools=["book_table"])
    for rid in every_cancel | {"r0"}:
        fresh.remove(rid)
    probe = clf._vectorise([mask_entities("Refund the cracked mug of order 12")])
    without, reference = clf._model_without(every_cancel | {"r0"}), fresh._fitted()
    assert list(without.classes_) == list(reference.classes_) == ["book_type", "refund_type"]
    assert np.allclose(without.predict_proba(probe), reference.predict_proba(probe), atol=2e-3)


def test_search_embeds_the_masked_query_in_the_querys_encoder_pass():
    _, mem = _refunds_and_addresses("embedding")
    passes: list[list[str]] = []
    embed = mem.embedder.embed
    mem.embedder.embed = lambda texts: passes.append(list(texts)) or embed(texts)
    query = "Alice Chen in Denver wants a refund for order 9911"
    res = mem.search(query, now=T0 + timedelta(days=1))
    reading = [p for p in passes if query in p or mask_entities(query) in p]
    assert reading == [[query, mask_entities(query)]]  # one pass for both (the others: the stored requests)
    assert (res.task_type, res.task_type_source) == ("issue_refund", "inferred")
    clf = mem.index_.classifier
    n = len(passes)
    assert clf.predict(query) == (res.task_type, res.task_type_share)  # read from the vector handed over
    assert len(passes) == n
    # the same type and probability as a classifier that embeds the masked query itself
    clf.forget_vectors()
    assert clf.predict(query) == (res.task_type, res.task_type_share)


def test_instance_blind_forgets_the_instance_of_a_removed_or_evicted_request():
    # the requests about the query's instance are found through the items of their signatures; a request removed,
    # or evicted as its type's oldest, is no longer found
    blind = _with_a_lure(True)
    assert blind.left_out(REFUND_LIKE_THE_LURE) == {"lure"}
    blind.remove("lure")
    assert blind.left_out(REFUND_LIKE_THE_LURE) == frozenset()
    assert all("lure" not in ids for ids in blind._naming.values())
    small = TaskTypeClassifier(max_per_type=1, min_votes=1, min_share=0.0, instance_blind=True)
    small.add("old", LURE, "cancel", 1.0)
    small.add("new", "Please cancel the kettle on order 5150 for Ines Roy", "cancel", 2.0)  # evicts "old"
    assert small.left_out(REFUND_LIKE_THE_LURE) == frozenset()
    assert set().union(*small._naming.values()) == {"new"}


def test_a_model_without_a_few_examples_is_the_whole_sets_when_the_solver_would_not_move_from_it():
    # leaving a few rows out of many moves the optimum less than the solver's tolerance: L-BFGS started from the
    # whole set's solution stops before its first step. The classifier then reuses the whole set's model, and says
    # so exactly when the fit would have made no step
    import numpy as np

    words = {"refund": "give the money back refund the broken", "cancel": "stop the purchase cancel the order of",
             "address": "change the delivery address move the parcel of"}
    things = ["lamp", "mug", "desk", "chair", "kettle", "sofa", "rug", "fan", "bed", "shelf", "clock", "vase"]
    clf = TaskTypeClassifier(min_votes=1, min_share=0.0, method="embedding", embed=HashingEmbedder(dim=256).embed,
                             max_per_type=200)
    for t, (kind, phrase) in enumerate(words.items()):
        for i, thing in enumerate(things * 4):
            clf.add(f"{kind}{i}", f"{phrase} {thing} number {i} for customer {i % 7}", kind, float(t * 100 + i),
                    tools=[f"{kind}_tool"])
    full = clf._fitted()
    cases = [frozenset({"refund0"}), frozenset({"cancel3", "address5"}),
             frozenset(f"refund{i}" for i in range(30)), frozenset(f"cancel{i}" for i in range(0, 48, 2))]
    settled = [clf._design.settles(full, left_out) for left_out in cases]
    steps = [int(clf._fit(left_out).n_iter_[0]) for left_out in cases]
    assert settled == [n == 0 for n in steps]
    assert settled == [True, True, False, False]  # a few rows out of 144 settle, a fifth of them does not
    probe = clf._vectorise([mask_entities("refund the broken lamp")])
    for left_out, ok in zip(cases, settled):
        reused = clf._model_without(left_out)
        assert (reused is full) == ok
        assert np.allclose(reused.predict_proba(probe), clf._fit(left_out).predict_proba(probe))
    assert not clf._design.settles(full, frozenset(f"address{i}" for i in range(48)))  # a whole type: other classes


def test_type_match_contains_credits_a_run_whose_tools_include_the_query_types():
    # a stored run that refunded an order and changed the address derives the type issue_refund+update_address:
    # asked for the query's type itself (exact) it misses an address change; asked for a type that includes it
    # (contains) it matches, while the refunds, which never changed an address, still miss
    cfg, mem = _refunds_and_addresses("logistic")
    cfg = cfg.with_params({"retrieval.classifier.intent": False, "retrieval.min_similarity": -1.0})
    mem.write_episode(episode("both", "Dmitri Novak: refund order 12 and send it to my new address",
                              ["lookup_order", "issue_refund", "update_address"]), now=T0 + timedelta(hours=8))

    def task_type_terms(config: LabConfig) -> dict[str, float]:
        m = MemorySystem(config, store=mem.store, embedder=mem.embedder).open()
        res = m.search("Change the delivery address of Dmitri Novak to 4 Elm Road, please",
                       now=T0 + timedelta(days=1), explain=True)
        assert res.task_type == "update_address"
        return {r.source_episode_ids[0]: float(v) for r, v in zip(res.candidates.records,
                                                                  res.candidates.raw["task_type"])}

    exact = task_type_terms(cfg)
    contains = task_type_terms(cfg.with_params({"retrieval.type_match": "contains"}))
    assert mem.stored_episode("both").task_type == "issue_refund+update_address"
    assert (exact["both"], exact["a0"], exact["r0"]) == (0.0, 1.0, 0.0)  # the control
    assert (contains["both"], contains["a0"], contains["r0"]) == (1.0, 1.0, 0.0)


def _lure_typing(pairs, minilm, **kw) -> list[bool]:
    """For each lure pair, whether a classifier that learnt the pair's stored runs (as the default memory learns
    them: successes and outages) types the query as its own run derives."""
    from hindsight_lab.config import LabConfig
    from hindsight_lab.retrieve.classify import learns_from
    from hindsight_lab.trace.summary import derive_task_type

    read_only = LabConfig().episode.read_only_prefixes
    right = []
    for p in pairs:
        clf = TaskTypeClassifier(min_votes=2, min_share=0.3, method="embedding", embed=minilm.embed,
                                 instance_blind=True, **kw)
        for j, e in enumerate(p.memories):
            if learns_from("not_strategy", e.outcome, e.failure_cause):
                clf.add(str(j), e.instruction, derive_task_type(e, read_only), float(j), tools=e.tool_names())
        right.append(clf.predict(p.query.instruction)[0] == derive_task_type(p.query, read_only))
    return right


@pytest.mark.slow
def test_contrast_reads_a_query_by_the_words_that_set_it_apart_from_its_instances_other_request(minilm):
    from hindsight_lab.datasets.synthetic import generate
    from hindsight_lab.scenarios.lures import lure_pairs

    # the lure says "Please cancel order 27214, the green coffee grinder that …" where the query says "Set up an
    # exchange on order 27214, the green coffee grinder that …": read whole, the embedding weighs the grinder more
    # than the verb, and the query is often read as the kind of task other grinders came to
    pairs = lure_pairs(generate("lures", n=30, seed=3))
    whole = _lure_typing(pairs, minilm)
    contrasted = _lure_typing(pairs, minilm, contrast=True)
    assert sum(contrasted) >= sum(whole) + 3, (sum(whole), sum(contrasted))
    assert sum(contrasted) >= 0.9 * len(pairs)


def test_contrast_leaves_alone_a_request_whose_instance_has_only_retries_in_other_words(minilm):
    # two earlier requests about the same customer and order, worded otherwise but asking the same: the words
    # that differ are scattered and read as no type surely enough, so the query is read whole
    retries = ["Hi, the blue lamp on order 6120 for Gina Park in Rome arrived broken and she wants a refund",
               "Gina Park from Rome got order 6120, the blue lamp, in pieces; please pay her back"]

    def trained(contrast: bool) -> TaskTypeClassifier:
        clf = TaskTypeClassifier(min_votes=1, min_share=0.3, method="embedding", embed=minilm.embed,
                                 instance_blind=True, contrast=contrast)
        for i, text in enumerate(REFUNDS):
            clf.add(f"r{i}", text, "refund", float(i))
        for i, text in enumerate(CANCELS):
            clf.add(f"c{i}", text, "cancel", float(i))
        for i, text in enumerate(retries):
            clf.add(f"again{i}", text, "refund", 9.0 + i)
        return clf

    assert trained(True).probabilities(REFUND_LIKE_THE_LURE) == trained(False).probabilities(REFUND_LIKE_THE_LURE)


def test_contrast_text_keeps_the_words_missing_from_some_other_request():
    from hindsight_lab.retrieve.wording import contrast_text

    q = mask_entities("Reschedule Chloe Walsh from Malmo: the check-up on Tuesday at 17:30 should move to Monday.")
    lure = mask_entities("Book Chloe Walsh from Malmo a check-up for Tuesday at 17:30, please.")
    assert contrast_text(q, [lure]) == "Reschedule the on should move to"
    assert contrast_text(q, [lure, q]) == "Reschedule the on should move to"  # a retry takes nothing away
    assert contrast_text(q, []) == ""
