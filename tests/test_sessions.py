import json

import pytest

from agent_nb import AgentSession


def test_round_trip_through_json():
    s = AgentSession(state={"turns": 2, "notes": ["a", {"b": None}]})
    data = json.loads(json.dumps(s.to_dict()))
    back = AgentSession.from_dict(data)
    assert back == s and back.session_id == s.session_id


def test_ids_are_unique_by_default():
    assert AgentSession().session_id != AgentSession().session_id


def test_unserialisable_state_is_a_clear_error_and_state_is_kept():
    s = AgentSession("s1", {"ok": 1, "bad": object()})
    with pytest.raises(TypeError, match=r"session 's1' cannot be saved.*JSON"):
        s.to_dict()
    assert set(s.state) == {"ok", "bad"}


def test_from_dict_rejects_other_shapes():
    with pytest.raises(ValueError, match="session_id"):
        AgentSession.from_dict({"state": {}})
