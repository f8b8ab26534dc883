"""OpenAI clients on the official SDK's async client: Chat Completions and Responses.

Both work with any OpenAI-compatible server through ``base_url`` (llama.cpp's server,
vLLM, Ollama). The API key comes from ``api_key`` or ``OPENAI_API_KEY``; ``default_headers``
are sent with every request (a proxy's token, say), ``extra_headers`` with one.

**No secret is shown.** A client knows its secrets: the API key, ``OPENAI_API_KEY``, and the
value of every header or option whose name says key, token, secret, password or
authorisation (``default_headers``, ``extra_headers``, ``extra_body``, options, a run's
``client_kwargs``), and every ``Bearer`` token (see ``agent_nb.clients.redaction``). None
reaches a repr, an error message or an error's chain, nor an answer: a server that echoes
one back has it replaced by ``***``, in whole answers and across the pieces of a stream.

**Errors.** Server errors become agent_nb errors: ``ModelRateLimited``, ``ModelTimeout``,
``ModelUnavailable`` (retryable) and ``ModelBadRequest`` (with the server's own message).
A 200 that is not an answer of the API (``{}``, an HTML page, broken JSON, a stream of
garbage, an event of an unknown shape) is a ``ModelError`` naming the client, model, base
URL and endpoint, what is wrong and what came back (scrubbed, a few hundred characters at
most); a stream that stops before its end (no ``finish_reason``, no ``response.completed``)
is a ``ModelUnavailable``. Streams are always closed, even when left early.

Request options use one vocabulary for both APIs, so a routed conversation can keep its
agent's options when it moves: ``model``, ``temperature``, ``top_p``, ``max_tokens``,
``seed``, ``stop``, ``tools``, ``tool_choice``, ``parallel_tool_calls``,
``response_format``, ``user``, ``extra_body``, ``extra_headers``, and each API's own
(``max_completion_tokens``, ``presence_penalty``, ``reasoning``, ``instructions``, ...).
Each client translates what its API names differently and leaves out what its API does
not have (the Responses API has no ``seed`` or ``stop``); an unknown name is an error.

```python
local = OpenAIChatClient("gemma", base_url="http://127.0.0.1:8080/v1")
hosted = OpenAIResponsesClient("gpt-4.1-mini")  # store=False: caller-managed, so it can be routed
```
"""

from .chat import OpenAIChatClient
from .responses import OpenAIResponsesClient, import_conversation

__all__ = ["OpenAIChatClient", "OpenAIResponsesClient", "import_conversation"]
