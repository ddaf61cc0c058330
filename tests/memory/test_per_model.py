"""configurator/memory/per_model.py: a pure function of a model computed once per model object and arguments."""

from configurator.memory.per_model import MAX_ENTRIES, per_model
from configurator.memory.weights import count_params
from configurator.model import catalog


def test_computed_once_per_model_object_and_arguments():
    calls = []

    @per_model
    def f(model, *, k=0):
        calls.append((model, k))
        return (len(calls), k)

    a, b = object(), object()
    assert f(a, k=1) == f(a, k=1) == (1, 1)  # the second call is remembered
    assert f(a, k=2) == (2, 2) and f(b, k=1) == (3, 1)  # another argument, another object: computed
    assert f(a, k=[1]) == (4, [1]) and f(a, k=[1]) == (5, [1])  # unhashable: computed each time, never an error
    for _ in range(MAX_ENTRIES + 1):  # bounded: the cache never holds more than MAX_ENTRIES models
        f(object())
    assert len(calls) == 5 + MAX_ENTRIES + 1


def test_count_params_is_the_same_remembered_or_not():
    spec = catalog.find("Qwen/Qwen3-8B").spec()
    assert count_params(spec) is count_params(spec)
    assert count_params(spec) == count_params.__wrapped__(spec)
