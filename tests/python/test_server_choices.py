"""Several choices in one response (request field n) on /v1/completions and
/v1/chat/completions, through the official `openai` client: n choices with
indexes 0..n-1, each sampled on its own (choice i with the seed plus i, as
llama-server's child tasks), streamed and not, usage counting every choice's
tokens and the prompt once; more choices than slots (-np) is a 400."""
import collections

import openai
import pytest
from openai import OpenAI

TIMEOUT = 300
STORY = "Once upon a time, in a small village by the sea,"
HI = [{"role": "user", "content": "Tell me a story about a cat."}]


@pytest.fixture(scope="module")
def client(cohort_server):
    return OpenAI(base_url=cohort_server + "/v1", api_key="none", timeout=TIMEOUT, max_retries=0)


def _texts(response):
    assert [c.index for c in response.choices] == list(range(len(response.choices)))
    return [c.text for c in response.choices]


def test_greedy_choices_are_the_single_answer(client):
    one = client.completions.create(model="m", prompt=STORY, max_tokens=12, temperature=0)
    two = client.completions.create(model="m", prompt=STORY, max_tokens=12, temperature=0, n=2)
    assert _texts(two) == [one.choices[0].text] * 2
    assert two.usage.prompt_tokens == one.usage.prompt_tokens
    assert two.usage.completion_tokens == 2 * one.usage.completion_tokens
    assert two.usage.total_tokens == two.usage.prompt_tokens + two.usage.completion_tokens


def test_each_choice_samples_with_the_seed_plus_its_index(client):
    def sample(seed):
        return _texts(client.completions.create(model="m", prompt=STORY, max_tokens=16, temperature=1.2,
                                                seed=seed, n=2))
    first, again, next_seed = sample(11), sample(11), sample(12)
    assert first == again, "the same seed gives the same choices"
    assert first[0] != first[1], "the choices are sampled independently"
    assert first[1] == next_seed[0], "choice 1 of seed 11 is choice 0 of seed 12"


def test_chat_stream_of_two_choices_matches_the_whole_answer(client):
    args = dict(model="m", messages=HI, max_tokens=12, temperature=1.0, seed=5, n=2)
    whole = client.chat.completions.create(**args)
    assert [c.index for c in whole.choices] == [0, 1]
    text, finishes = collections.defaultdict(str), collections.Counter()
    usage = None
    for chunk in client.chat.completions.create(**args, stream=True, stream_options={"include_usage": True}):
        if chunk.usage is not None:
            usage = chunk.usage
        for c in chunk.choices:
            text[c.index] += c.delta.content or ""
            if c.finish_reason is not None:
                finishes[c.index] += 1
    assert dict(text) == {c.index: c.message.content for c in whole.choices}
    assert finishes == {0: 1, 1: 1}
    assert usage.completion_tokens == whole.usage.completion_tokens
    assert usage.prompt_tokens == whole.usage.prompt_tokens


def test_more_choices_than_slots_is_a_bad_request(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="m", prompt="Hi", max_tokens=2, n=3)  # the server has -np 2
    assert "slots" in str(e.value)
