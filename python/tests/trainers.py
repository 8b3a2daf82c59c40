"""How each trainer talks to a reward service and reads its answer, written
for these tests from the trainers' documented behaviour and code at their
current main branches (read, not copied). Each function says what it
stands for; the tests run them unchanged against `rlpost serve`.

OpenRLHF (openrlhf/utils/agent.py SingleTurnAgentExecutor,
openrlhf/trainer/ppo_utils/samples_generator.py, experience_maker.py):
since v0.9.1 one request per sample, to the first URL of
--reward.remote_url only; a new aiohttp.ClientSession per attempt,
ClientTimeout(total=180), five attempts one second apart on any error
(raise_for_status makes a 4xx/5xx an error), then the reward stays None.
The answer's "rewards" and "scores" (lists of one) become
torch.tensor([value]); group estimators reshape the concatenation to
(prompts, n_samples_per_prompt) and take mean/std over the last axis.

slime (slime/rollout/rm_hub/__init__.py remote_rm, slime/ray/rollout.py):
one request per sample on one shared aiohttp.ClientSession
(TCPConnector(limit=64), ClientTimeout(total=120)), body {"prompt",
"response", "label"}, ten attempts with backoff min(2**k, 30) s + U(0,1),
then the exception propagates (the rollout fails). The reward is the JSON
answer, or answer[--reward-key]; GRPO normalises torch.tensor(rewards,
dtype=torch.float) per group (mean, then std + 1e-6).

verl and TRL call Python functions; their calling conventions are in
test_verl.py and test_trl.py.
"""

import asyncio
import base64
import importlib.util
import json
import random
import time
import urllib.parse
import urllib.request

try:
    import aiohttp
except ImportError:  # the urllib stand-ins below send the same JSON
    aiohttp = None

try:
    import torch
except ImportError:
    torch = None


# -- OpenRLHF -----------------------------------------------------------------


class OpenRLHFRewardFailed(Exception):
    pass


async def openrlhf_fetch_reward(url, query, prompt, label, tries=5, sleep=1.0):
    """One sample's reward call: the answer dict, or OpenRLHFRewardFailed
    after `tries` failures (OpenRLHF then leaves the reward None). url may
    be a list (--reward.remote_url a,b): OpenRLHF shards the one-sample
    list over them, so the first gets the sample and the others an empty
    request each, and only the first answer is used."""
    urls = [url] if isinstance(url, str) else list(url)
    per = (1 + len(urls) - 1) // len(urls)
    shards = [{"query": [query][i * per:(i + 1) * per], "prompts": [prompt][i * per:(i + 1) * per],
               "labels": [label][i * per:(i + 1) * per]} for i in range(len(urls))]
    answers = await asyncio.gather(*(_openrlhf_post(u, p, tries, sleep) for u, p in zip(urls, shards)))
    return answers[0]


async def _openrlhf_post(url, payload, tries, sleep):
    last = None
    for _ in range(tries):
        try:
            if aiohttp is not None:
                async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=180)) as session:
                    async with session.post(url, json=payload) as response:
                        response.raise_for_status()
                        return await response.json()
            return await asyncio.get_running_loop().run_in_executor(None, _urllib_post, url, payload, 180)
        except Exception as e:  # OpenRLHF logs and retries on any error
            last = e
            await asyncio.sleep(sleep)
    raise OpenRLHFRewardFailed("Request error for %d times" % tries) from last


def _urllib_post(url, payload, timeout):
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
    if "@" in url:  # urllib does not send a URL's credentials by itself
        p = urllib.parse.urlsplit(url)
        req = urllib.request.Request(
            urllib.parse.urlunsplit((p.scheme, p.netloc.rsplit("@", 1)[1], p.path, p.query, "")),
            data=req.data, headers={
                "Content-Type": "application/json",
                "Authorization": "Basic " + base64.b64encode(
                    ("%s:%s" % (urllib.parse.unquote(p.username), urllib.parse.unquote(p.password))).encode()).decode()})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def openrlhf_experience(answer):
    """What OpenRLHF keeps of one answer: (rewards, scores, info), the first
    two torch tensors of shape (1, 1) as it builds them."""
    reward_val = answer.get("rewards")
    score_val = answer.get("scores")
    if score_val is None:
        score_val = reward_val
    info = {}
    for key, value in (answer.get("extra_logs") or {}).items():
        info[key] = torch.tensor([value])
    return torch.tensor([reward_val]), torch.tensor([score_val]), info


def openrlhf_advantage_rewards(rewards, n_samples_per_prompt, estimator):
    """OpenRLHF's reward shaping for the group estimators on the per-sample
    reward tensors: group_norm, rloo, reinforce_baseline, dr_grpo."""
    r = torch.cat(rewards, dim=0).reshape(-1, n_samples_per_prompt)
    group_std = r.std(-1, keepdim=True)  # logged as group_reward_std for every estimator
    if estimator == "rloo":
        return r - (r.sum(-1, keepdim=True) - r) / (n_samples_per_prompt - 1), group_std
    if estimator in ("reinforce_baseline", "dr_grpo"):
        return r - r.mean(-1, keepdim=True), group_std
    if estimator == "group_norm":
        return (r - r.mean(-1, keepdim=True)) / (r.std(-1, keepdim=True) + 1e-9), group_std
    raise ValueError(estimator)


# -- slime --------------------------------------------------------------------


class SlimeRM:
    """slime's remote_rm with its shared session (use within one event loop)."""

    def __init__(self, rm_url, max_retries=10, backoff_cap=30.0):
        self.rm_url = rm_url
        self.max_retries = max_retries
        self.backoff_cap = backoff_cap
        self.session = None
        self.attempts = 0

    async def __call__(self, prompt, response, label):
        payload = {"prompt": prompt, "response": response, "label": label}
        if aiohttp is not None and self.session is None:
            self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64, enable_cleanup_closed=True),
                                                 timeout=aiohttp.ClientTimeout(total=120))
        for attempt in range(self.max_retries):
            self.attempts += 1
            try:
                if self.session is not None:
                    async with self.session.post(self.rm_url, json=payload) as resp:
                        resp.raise_for_status()
                        return await resp.json()
                return await asyncio.get_running_loop().run_in_executor(None, _urllib_post, self.rm_url, payload, 120)
            except Exception:
                if attempt + 1 >= self.max_retries:
                    raise
                await asyncio.sleep(min(2 ** attempt, self.backoff_cap) + random.random())

    async def close(self):
        if self.session is not None:
            await self.session.close()


def slime_reward_value(reward, reward_key):
    """Sample.get_reward_value: the reward, or reward[--reward-key]."""
    return reward if not reward_key else reward[reward_key]


def slime_grpo_rewards(raw_rewards, n_samples_per_prompt, std_normalization=True):
    """slime's _post_process_rewards for grpo with --rewards-normalization."""
    rewards = torch.tensor(raw_rewards, dtype=torch.float).reshape(-1, n_samples_per_prompt)
    rewards = rewards - rewards.mean(dim=-1, keepdim=True)
    if std_normalization:
        rewards = rewards / (rewards.std(dim=-1, keepdim=True) + 1e-6)
    return rewards.flatten().tolist()


# -- verl ---------------------------------------------------------------------


def verl_load(path, name, module_name=None):
    """verl's load_extern_object for a file path: importlib from the file,
    under a name of its own, not added to sys.modules, sys.path unchanged."""
    spec = importlib.util.spec_from_file_location(module_name or "custom_module_%d" % hash(path), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def verl_call_with_kwargs(raw_fn, extra_kwargs, *args, **kwargs):
    """verl's wrapper around a custom reward function (get_custom_reward_fn
    returns functools.partial(this, raw_fn, reward_kwargs)): reward_kwargs
    win over the call's keywords."""
    return raw_fn(*args, **{**kwargs, **extra_kwargs})


def timed(fn, *args, **kwargs):
    t = time.monotonic()
    out = fn(*args, **kwargs)
    return out, time.monotonic() - t

