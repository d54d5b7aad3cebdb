"""The client's surface against a real server (SQLite and PostgreSQL): accounts, tasks and rounds, writing and
validating examples, typed errors, submitting a model and reading its results, the leaderboard, predictions, and the
export."""

from __future__ import annotations

import pytest

import dynaforge_client as dc
from dynaforge_client import AsyncClient, Client, errors

FOOLS = {"statement": "I loved every minute of this wonderful, moving film.", "label": "negative"}
AGREES = {"statement": "A wonderful film with a moving story and great acting.", "label": "positive"}


async def signed_up(server, name: str) -> AsyncClient:
    client = AsyncClient(server.url)
    await client.register(name, f"{name}@example.org", f"{name} password 123")
    return client


async def test_accounts(server, unique):
    async with AsyncClient(server.url + "/graphql") as client:  # the endpoint's address works as well
        assert await client.me() is None
        user = await client.register(f"ann{unique}", f"ann{unique}@example.org", "a long password 1")
        assert user.username == f"ann{unique}" and client.token
        assert (await client.me()).username == f"ann{unique}"
        with pytest.raises(errors.AlreadyExists):
            await client.register(f"ann{unique}", f"other{unique}@example.org", "a long password 1")
    async with AsyncClient(server.url) as other:
        with pytest.raises(errors.InvalidCredentials):
            await other.login(f"ann{unique}", "not the password")
        assert other.token is None
        await other.login(f"ann{unique}", "a long password 1")
        assert (await other.me()).username == f"ann{unique}"
    async with AsyncClient(server.url, token="df_not_a_real_token") as stranger:
        with pytest.raises(errors.NotAuthenticated) as caught:
            await stranger.create_example("sentiment", FOOLS)
        assert caught.value.code == "NOT_AUTHENTICATED"
        with pytest.raises(errors.NotAuthenticated, match="does not sign anyone in"):
            await stranger.me()  # reads run as anonymous: me() is how to check a token


async def test_tasks_rounds_and_examples(server, unique):
    client = await signed_up(server, f"bo{unique}")
    async with client:
        codes = {t.code for t in await client.tasks()}
        assert {"nli", "qa", "sentiment", "hatespeech"} <= codes
        task = await client.task("sentiment")
        assert "positive" in task.labels and task.current_round is not None
        assert [f.name for f in task.fields if f.role.value == "INPUT"] == ["statement"]
        round_ = await client.round("sentiment")
        assert round_.number == task.current_round.number
        with pytest.raises(errors.NotFound):
            await client.task("no-such-task")
        with pytest.raises(errors.NotFound):
            await client.next_context("sentiment")  # sentiment writes without contexts

        before = (await client.stats("sentiment")).total
        fooled = await client.create_example("sentiment", FOOLS, tag="client-test", time_taken_ms=1200)
        assert fooled.fooled is True and fooled.prediction.label == "positive"
        assert fooled.fields["statement"] == FOOLS["statement"] and fooled.tag == "client-test"
        agrees = await client.create_example("sentiment", AGREES)
        assert agrees.fooled is False
        assert (await client.example(fooled)).id == fooled.id  # an object or its id

        with pytest.raises(errors.InvalidInput) as caught:
            await client.create_example("sentiment", {"statement": "", "label": "maybe"})
        paths = {e.path: e for e in caught.value.field_errors}
        assert set(paths) == {"statement", "label"}, paths
        assert paths["label"].rule == "choice" and paths["label"].code == "CHOICE"
        assert "positive" in paths["label"].message

        after = (await client.stats("sentiment")).total
        assert (after.collected, after.fooled) == (before.collected + 2, before.fooled + 1)  # nothing half-written


async def test_validation(server, unique):
    author = await signed_up(server, f"cy{unique}")
    validator = await signed_up(server, f"di{unique}")
    async with author, validator, AsyncClient(server.url, server.token) as operator:
        example = await author.create_example("sentiment", {**FOOLS, "statement": f"Truly lovely work {unique}."})
        with pytest.raises(errors.DynaforgeError):
            await author.validate(example, "CORRECT")  # not on your own example
        queued = []
        while (candidate := await validator.example_to_validate("sentiment")) is not None:
            queued.append(candidate.id)
            if candidate.id == example.id:
                break
            await validator.validate(candidate, "CORRECT")
        assert example.id in queued
        with pytest.raises(errors.InvalidInput, match="timeTakenMs"):
            await validator.validate(example, "CORRECT", time_taken_ms=-1)
        voted = await validator.validate(example, "CORRECT", time_taken_ms=1500)
        assert voted.votes.correct == 1
        with pytest.raises(errors.AlreadyExists):
            await validator.validate(example, "INCORRECT")
        decided = await operator.validate(example, "CORRECT")  # an admin's vote decides
        assert decided.status.value == "ACCEPTED"

        # The owners' view of the validator: the admin's decision agreed with their vote, which took 1.5 s.
        quality = await operator.validator_quality("sentiment")
        standing = next(v for v in quality.validators if v.user.username == f"di{unique}")
        assert standing.votes == len(queued) and standing.median_time_taken_ms == 1500
        assert standing.owner_decided_votes >= 1 and standing.agreed_with_owner_votes >= 1
        assert [r.round_number for r in quality.rounds][0] == 1
        with pytest.raises(errors.Forbidden):
            await validator.validator_quality("sentiment")
        weighed = await operator.set_validator_weights("sentiment", {standing.user.id: 2.5})
        assert next(v.weight for v in weighed.validators if v.user.id == standing.user.id) == 2.5
        with pytest.raises(errors.InvalidInput, match="between 0"):
            await operator.set_validator_weights("sentiment", {standing.user.id: 11})
        await operator.set_validator_weights("sentiment", {standing.user.id: 1})  # the shared server's default again

        # A vote withdrawn within its window: counts back, and the example in the queue again.
        other = await author.create_example("sentiment", {**FOOLS, "statement": f"A lovely, lovely day {unique}."})
        voted = await validator.validate(other, "CORRECT")
        back = await validator.withdraw_validation(other)
        assert (voted.votes.correct, back.votes.correct) == (1, 0)
        with pytest.raises(errors.NotFound):
            await validator.withdraw_validation(other)

        # The decided example as practice: a tutorial item the validator answers, then tries again.
        added = await operator.execute(
            'mutation ($id: ID!) { addTutorialItem(input: {exampleId: $id, explanation: "It praises."}) { '
            "__typename } }",
            {"id": example.id},
        )
        assert added["addTutorialItem"]["__typename"] == "TutorialItemAdded"
        try:
            seen = await validator.tutorial("sentiment")
            item = next(i for i in seen.items if i.example_id == example.id)
            assert item.expected is None and not seen.required  # no pass mark: practice only
            answered = await validator.answer_tutorial(item, "INCORRECT")
            assert answered.item.correct is False and answered.item.explanation == "It praises."
            with pytest.raises(errors.AlreadyExists):
                await validator.answer_tutorial(item, "CORRECT")
            assert (await validator.restart_tutorial("sentiment")).answered == 0
        finally:
            await operator.execute(
                "mutation ($id: ID!) { removeTutorialItem(input: {exampleId: $id}) { __typename } }",
                {"id": example.id},
            )

        analytics = await operator.round_analytics("sentiment", example.round.number, "DAY")
        mine = next(a for a in analytics.annotators if a.user.username == f"di{unique}")
        assert mine.validations >= 1 and analytics.bucket.value == "DAY"
        assert sum(p.collected for p in analytics.periods) == sum(s.stats.collected for s in analytics.sources)
        with pytest.raises(errors.Forbidden):
            await validator.round_analytics("sentiment", example.round.number)


async def test_submit_model_and_results(server, unique):
    progress: list[tuple[int, int]] = []
    events: list = []
    async with AsyncClient(server.url, server.token) as client:
        model = await client.submit_model(
            "sentiment",
            path=server.model_folder,
            name=f"tiny-{unique}",
            card={"license": "mit", "description": "A two-layer BERT, randomly initialised."},
            published=True,
            progress=lambda done, total: progress.append((done, total)),
        )
        assert model.status.value in ("SUBMITTED", "EVALUATING") and model.name == f"tiny-{unique}"
        assert model.card.license == "mit"
        assert progress and progress[-1][0] == progress[-1][1] > 0

        results = await client.wait_for_results(model, timeout=300, on_progress=events.append)
        assert results.done and not results.failed, [e.error for e in results.evaluations]
        scored = {e.dataset.name: e for e in results.evaluations}
        evaluation = scored["client-test"]
        accuracy = next(m for m in evaluation.metrics if m.name == "accuracy")
        assert 0.0 <= accuracy.value <= 1.0
        assert accuracy.interval is not None and accuracy.interval.low <= accuracy.value <= accuracy.interval.high
        # a scoring set shows its public half until its round ends
        assert evaluation.item_count == 6 and evaluation.throughput and evaluation.throughput > 0
        assert results.metrics()["client-test"]["accuracy"] == accuracy.value
        rows = results.records()
        assert {"dataset": "client-test", "metric": "accuracy", "value": accuracy.value}.items() <= next(
            r for r in rows if r["metric"] == "accuracy"
        ).items()
        frame = results.to_pandas()
        assert set(frame.columns) >= {"dataset", "metric", "value", "low", "high"}

        board = await client.leaderboard("sentiment", {"accuracy": 4, "throughput": 1})
        weights = board.metric_weights  # normalised by the server: the ratio is what was asked for
        assert weights["accuracy"] == pytest.approx(4 * weights["throughput"])
        mine = [r for r in board.records() if r["model_id"] == model.id]
        assert mine and mine[0]["accuracy"] == pytest.approx(accuracy.value)
        table = board.to_pandas()
        assert model.name in set(table["model"])
        by_metric = await client.leaderboard("sentiment", sort_metric="accuracy")
        assert any(r.model.model_id == model.id for r in by_metric.rows)

        with pytest.raises(errors.InvalidInput):
            await client.leaderboard("sentiment", {"no-such-metric": 1})


async def test_upload_predictions(server, unique):
    async with AsyncClient(server.url, server.token) as client:
        names = {d.name: d for d in await client.datasets("sentiment")}
        assert names["client-test"].size == 12
        predictions = [{"label": "positive"}] * 12
        model = await client.upload_predictions("sentiment", "client-test", predictions, name=f"all-positive-{unique}")
        results = await client.results(model)
        accuracy = results.metrics()["client-test"]["accuracy"]
        assert accuracy == pytest.approx(6 / 12)  # half of the set is positive
        with pytest.raises(errors.InvalidInput) as caught:
            await client.upload_predictions("sentiment", "client-test", predictions[:3], name=f"short-{unique}")
        assert caught.value.field_errors

        # item by item: the set's twelve items (its held-out half included: the operator is an admin), each right
        # exactly where its gold label is the one predicted
        [evaluation] = [e for e in results.evaluations if e.dataset.name == "client-test"]
        items = await client.item_predictions(evaluation)
        assert [i["position"] for i in items] == list(range(12))
        assert {i["evaluation"] for i in items} == {evaluation.id} and {i["model"] for i in items} == {model.id}
        assert [i["right"] for i in items] == [i["fields"]["label"] == "positive" for i in items]
        assert sum(i["right"] for i in items) == 6
        # against a model that says negative everywhere: right on the other six, so the gap is nothing but chance
        negative = await client.upload_predictions(
            "sentiment", "client-test", [{"label": "negative"}] * 12, name=f"all-negative-{unique}"
        )
        test = await client.paired_test("sentiment", model, negative, names["client-test"])
        assert (test.items, test.only_model_right, test.only_against_right, test.both_right) == (12, 6, 6, 0)
        assert test.mcnemar_p_value == 1.0 and test.difference.value == 0.0
        with pytest.raises(errors.InvalidInput):
            await client.paired_test("sentiment", model, model, names["client-test"])


async def test_submit_model_refusals(server, unique, tmp_path):
    # a new user: the operator's own submissions to the task are spent by the tests above (three a day)
    async with await signed_up(server, f"sub{unique}") as client:
        with pytest.raises(ValueError):
            await client.submit_model("sentiment", name="nothing")
        (tmp_path / "config.json").write_text("{}")
        (tmp_path / "weights.bin").write_bytes(b"pickle would be here")
        with pytest.raises(errors.InvalidInput) as caught:
            await client.submit_model("sentiment", path=tmp_path, name=f"pickle-{unique}")
        assert any(e.rule == "pickle" for e in caught.value.field_errors), caught.value
    async with AsyncClient(server.url) as anonymous:
        with pytest.raises(errors.NotAuthenticated):
            await anonymous.submit_model("sentiment", path=server.model_folder, name="anon")


async def test_export(server, unique, monkeypatch):
    writer = await signed_up(server, f"ed{unique}")
    async with writer, AsyncClient(server.url, server.token) as operator:
        statement = f"An export check sentence number {unique}."
        await writer.create_example("sentiment", {"statement": statement, "label": "positive"})
        number = (await operator.round("sentiment")).number
        dataset = await operator.export("sentiment", number)
        assert type(dataset).__name__ == "Dataset"
        rows = await operator.export("sentiment", number, records=True)
        assert any(r["fields"]["statement"] == statement for r in rows)
        assert operator.last_export_note is None
        # the Dataset has the hf export's schema: a column per field, the label a ClassLabel, the API's global ids
        ours = dataset.filter(lambda row: row["statement"] == statement)
        ((row,),) = [list(ours)]
        label = dataset.features["label"]
        assert type(label).__name__ == "ClassLabel" and label.int2str(row["label"]) == "positive"
        (record,) = [r for r in rows if r["fields"]["statement"] == statement]
        assert row["id"] == record["id"] and row["round"] == number and row["status"] == record["status"]
        assert dataset.features["fooled"].dtype == "bool" and dataset.features["time_taken_ms"].dtype == "int64"
        assert sorted(dataset["id"]) == sorted(r["id"] for r in rows)
        # the writer does not own the task, and the round is not split: an empty export that says why
        with pytest.warns(errors.EmptyExport, match="published"):
            assert await writer.export("sentiment", number, records=True) == []
        assert "createRoundDatasets" in (writer.last_export_note or "")
        with pytest.warns(errors.EmptyExport, match="published"):
            assert (await writer.export("sentiment", number)).num_rows == 0
        assert len(rows) == dataset.num_rows
        monkeypatch.setitem(__import__("sys").modules, "datasets", None)  # datasets not installed: records
        assert isinstance(await operator.export("sentiment", number), list)
        target = await operator.download_export("sentiment", __import__("pathlib").Path(f"/tmp/{unique}.jsonl"))
        assert statement in target.read_text()
        target.unlink()
        with pytest.raises(errors.NotFound):
            await operator.export("no-such-task")
        with pytest.raises(errors.InvalidInput):
            await operator.download_export("sentiment", f"/tmp/{unique}.x", format="no-such-format")


def test_blocking_client(server, unique):
    with Client(server.url) as client:
        client.register(f"fy{unique}", f"fy{unique}@example.org", "fy password 123")
        assert client.me().username == f"fy{unique}"
        example = client.create_example("sentiment", FOOLS)
        assert example.fooled is True
        assert isinstance(client.leaderboard("sentiment"), dc.Leaderboard)
        with pytest.raises(errors.NotFound):
            client.round("sentiment", 999)
        assert "create_example" in dir(client)


SETTING = (
    'mutation ($t: Float!) { updateTaskSettings(input: {taskCode: "hatespeech", nearDuplicateThreshold: $t}) { '
    "__typename } }"
)


async def test_a_near_duplicate_is_refused_until_allowed(server, unique):
    author = await signed_up(server, f"nd{unique}")
    async with author, AsyncClient(server.url, server.token) as operator:
        await operator.execute(SETTING, {"t": 0.7})
        try:
            text = f"People from every town are welcome at our long table tonight, {unique}."
            first = await author.create_example("hatespeech", {"statement": text, "label": "hateful"})
            assert first.fooled is True and first.near_duplicate is None
            with pytest.raises(errors.NearDuplicate) as caught:
                await author.create_example("hatespeech", {"statement": text.upper(), "label": "hateful"})
            assert caught.value.similarity == 1.0 and caught.value.threshold == 0.7
            assert caught.value.your_example_id == first.id
            sent = await author.create_example(
                "hatespeech", {"statement": text.upper(), "label": "hateful"}, allow_near_duplicate=True
            )
            assert sent.near_duplicate is not None and sent.near_duplicate.similarity == 1.0
        finally:
            await operator.execute(SETTING, {"t": 0})  # the shared server's tasks as they were
