"""Benchmark full-text search latency over 1,000,000 messages, on SQLite and PostgreSQL:
``python bench/search.py``.

The target (from the issue) is absolute: ``GET /v1/search/messages`` p99 < 50 ms at 1,000,000 messages.
Queries are sent one at a time, so this measures latency, not throughput. The corpus and the queries are
generated from a seed, so two runs (and the two shapes of one run) see the same words and the same
queries; only the ids differ. See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import platform
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from pathlib import Path
from random import Random
from typing import Any

import asyncpg
import httpx
from harness import (
    BENCH_DIR,
    RESULTS_DIR,
    BenchError,
    clean_env,
    format_table,
    free_port,
    postgres_database,
    run_checked,
    run_main,
    running_server,
)
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from threadline.config import normalize_database_url
from threadline.kit.db import Database
from threadline.kit.ids import new_id
from threadline.kit.pagination import PageParams
from threadline.messages.tables import messages as messages_table
from threadline.runtime import search_backend
from threadline.search import postgres as postgres_search
from threadline.search import postings, service
from threadline.search.backend import Hits, MessageFilter, page_of
from threadline.search.postgres import PostgresSearch

TARGET_P99_MS = 50.0
TARGET_TEXT = "search p99 < 50 ms at 1,000,000 messages"
RATE_LIMIT = 10_000_000  # the highest limit `orgs set-limit` accepts; the limiter must never throttle us
PAGE_LIMIT = 20
SHAPES = ("sqlite", "postgres")
THREADLINE = [sys.executable, "-m", "threadline"]
MESSAGES_PATH = "/v1/search/messages"
THREADS_PATH = "/v1/search/threads"

# ---------------------------------------------------------------------------------------------------------
# Vocabulary. Real chat text is Zipf-distributed: a few function words make up half of it, content words
# follow with a long tail. Search cost depends almost only on how many documents a term matches, so the
# distribution matters more than the words; the words are still real ones (plus inflections, which the
# query language's prefix and stem matching must handle) so that queries and snippets look like the product
# in use. Built in code, from a fixed seed, so the corpus is the same on every machine.
# ---------------------------------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    """Word lists written as prose: thousands of quoted list items would be unreadable."""
    return text.split()


# PostgreSQL's english.stop (Snowball), plus a few chat fillers. Never sampled as query words: PostgreSQL
# drops them from queries, SQLite does not, so a stop-word query would compare two different things.
STOPWORDS = frozenset(
    _words(
        """
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her
hers herself it its itself they them their theirs themselves what which who whom this that these
those am is are was were be been being have has had having do does did doing a an the and but if or
because as until while of at by for with about against between into through during before after
above below to from up down in out on off over under again further then once here there when where
why how all any both each few more most other some such no nor not only own same so than too very s
t can will just don should now would could may might must also yes ok okay thanks please sure let
got get one like
"""
    )
)
# Function words in rough frequency order: they take the top ranks, as in any English text.
FUNCTION_WORDS = _words(
    """
the to and a of i it is in you that for this on we be with not have can but are so if do was at as
just will my what be me from or they there an all now ok get would about should out up how our more
some could no also then when your one thanks here did yes has like any which sure had please been
them its into were than may only very might other too let over got because after before again same
both these those each few most such own once where why who while until off down under through during
above below between against further
"""
)
# Technical words frequent enough in an engineering team's threads to sit among the function words.
HOT_WORDS = _words(
    """
error deploy service request user database test build api issue fix data server update query
response config log release timeout
"""
)
COMMON_WORDS = _words(
    """
time year people way day thing work life world school state family group country problem hand part
place case week company system program question government number night point home water room money
story fact month lot right study book eye job word business side kind head house friend father power
hour game line end member law car city community name team minute idea body information back parent
face level office door health person art history party result change morning reason research moment
air teacher force education foot age policy music market sense plan interest death experience effect
class control care field development role effort rate heart show leader light voice mind price
decision view relationship town road difference value building action model season society director
position player record paper space ground form center couple site project activity star table need
court situation cost industry figure street image phone picture practice piece land product doctor
wall news movie love support technology step computer type attention film tree source organization
evidence window know take see come think look want give use find tell ask seem feel try leave call
keep begin help talk turn start hear play move live believe hold bring happen write provide sit
stand lose pay meet include continue set learn lead understand watch follow stop create speak read
allow add spend grow open walk win offer remember consider appear buy wait serve send expect stay
fall cut reach remain suggest raise pass sell require decide pull good new first last long great
little old big high different small large next early young important public bad able free clear late
hard major better strong possible whole real best special easy certain recent personal difficult
available likely short single current wrong private past fine common poor natural significant
similar hot dead central happy serious ready simple left general financial dark various entire close
legal cold final main green nice huge popular quick slow quiet weird strange broken stable flaky
today tomorrow yesterday morning afternoon evening weekend monday friday meeting call note review
answer problem reply agree idea priority deadline estimate sprint backlog standup retro demo
customer client manager engineer designer owner vendor partner contract budget goal
"""
)
TECH_VERBS = _words(
    """
deploy migrate retry cache restart reboot rebuild patch merge commit revert release scale throttle
fail crash hang spike alert page monitor log trace debug profile benchmark index query shard
replicate restore upgrade downgrade install configure provision authenticate authorize
validate serialize parse render compile bundle ship test lint refactor optimize allocate flush evict
expire invalidate sync fetch poll queue schedule dispatch route proxy encrypt decrypt hash sign
verify notify subscribe publish stream batch ingest export import archive delete update insert
select lock unlock block drop stop start run map tag pin scan plan charge refund invoice bill
onboard escalate resolve triage investigate reproduce mitigate roll
"""
)
TECH_NOUNS = _words(
    """
latency timeout database migration payment error cache cluster node pod container docker server
endpoint request response header token session cookie credential password user customer account
tenant project repository branch pipeline workflow job worker thread process memory disk cpu network
socket connection pool replica shard table column row schema transaction deadlock queue topic event
message webhook callback api sdk client library dependency package version release build artifact
image registry region zone instance volume bucket object file directory config setting variable
secret certificate domain gateway balancer firewall alert dashboard metric graph trace span incident
outage postmortem ticket bug issue feature flag experiment rollback rollout canary checkout cart
order invoice subscription refund charge card receipt email notification report backup snapshot
exception stacktrace crash panic spike regression benchmark throughput bandwidth quota limit uptime
downtime runbook playbook oncall pager escalation hotfix patch commit changelog environment
integration endpoint
"""
)
TECH_TERMS = _words(
    """
kubernetes postgres redis kafka nginx terraform grafana prometheus python golang javascript
typescript react frontend backend microservice monolith async json yaml http https grpc graphql
oauth jwt sso saml ssl tls dns cdn vpc iam s3 ec2 lambda k8s helm argo jenkins github gitlab sentry
datadog staging production development infrastructure deployment configuration authentication
authorization validation replication installation optimization notification allocation serialization
observability idempotency concurrency consistency availability reliability scalability 404 500 502
503 429
"""
)
# Doubled final consonant before -ing/-ed; irregular forms where the rules would be wrong.
DOUBLING = frozenset(_words("ship log drop stop map tag pin scan plan commit run debug"))
IRREGULAR = {
    "run": ["runs", "running", "ran"],
    "hang": ["hangs", "hanging", "hung"],
    "rebuild": ["rebuilds", "rebuilding", "rebuilt"],
}
# Multi-word terms people search as "quoted phrases"; inserted into messages so phrase queries find some.
COLLOCATIONS = [
    "deploy to production",
    "connection timeout",
    "database migration",
    "payment failed",
    "checkout page",
    "rollback plan",
    "error rate",
    "cache miss",
    "retry budget",
    "rate limit",
    "health check",
    "load balancer",
    "feature flag",
    "memory leak",
    "disk full",
    "stack trace",
    "root cause",
    "pull request",
    "merge conflict",
    "build failed",
    "test suite",
    "api key",
    "access token",
    "read replica",
    "query plan",
    "slow query",
    "message queue",
    "dead letter queue",
    "circuit breaker",
    "canary release",
    "p99 latency",
    "status page",
    "incident report",
    "customer support",
    "refund request",
    "password reset",
    "session expired",
    "out of memory",
    "permission denied",
    "service unavailable",
    "internal server error",
    "too many requests",
]
ZIPF_EXPONENT = 1.05
PSEUDO_WORDS = 4000  # the long tail: code names, hosts, customers, jargon; each matches a few hundred docs
VOCABULARY_SEED = 20_261_121  # fixed: the vocabulary is part of the benchmark's definition, not of --seed
ROLES = ("user", "assistant", "tool", "system")
ROLE_WEIGHTS = (45, 45, 7, 3)
ROLE_LENGTHS = {"user": (8, 30), "assistant": (20, 60), "tool": (8, 60), "system": (8, 40)}
COLLOCATION_PROBABILITY = 0.25
IDENTIFIER_PROBABILITY = 0.05  # an incident/order id such as "inc48213": needles that match ~1 message
IDENTIFIER_SPACE = 50_000
CORPUS_DAYS = 90
OTHER_ORG_SHARE = 50  # the second organization holds 1/50 of the main one's rows: tenant filters must work
WORD = re.compile(r"[^\W_]+")


def _plural(noun: str) -> str:
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _verb_forms(verb: str) -> list[str]:
    """-s, -ing and -ed forms: "deploy" -> "deploying" is exactly what stem-and-prefix matching must
    connect, so the corpus needs the inflections, not just the roots."""
    if verb in IRREGULAR:
        return IRREGULAR[verb]
    if verb in DOUBLING:
        return [verb + "s", verb + verb[-1] + "ing", verb + verb[-1] + "ed"]
    if verb.endswith("e") and not verb.endswith("ee"):
        return [verb + "s", verb[:-1] + "ing", verb + "d"]
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return [verb[:-1] + "ies", verb + "ing", verb[:-1] + "ied"]
    return [_plural(verb), verb + "ing", verb + "ed"]


def _pseudo_words(count: int, taken: set[str], rng: Random) -> list[str]:
    """Pronounceable made-up words for the tail (project code names, hosts, customers): real text has
    thousands of rare terms, and a few hundred real words cannot supply them."""
    onsets = _words("b br c d dr f g gr h j k kr l m n p pr r s st t tr v z")
    vowels = _words("a e i o u ai ou")
    codas = ["", "n", "r", "l", "x", "k", "m", "s", "th"]
    words: list[str] = []
    seen = set(taken)
    while len(words) < count:
        syllables = rng.choice((2, 2, 3))
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(syllables)) + rng.choice(codas)
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


@dataclass(frozen=True)
class Vocabulary:
    """Words by frequency rank, cumulative Zipf weights for sampling, and the content words (no stop words,
    at least 3 letters) in the same order, from which queries are drawn."""

    words: list[str]
    cum_weights: list[float]
    content: list[str]
    content_cum_weights: list[float]
    tail_start: int  # index in ``content`` where the made-up tail words begin


def build_vocabulary() -> Vocabulary:
    rng = Random(VOCABULARY_SEED)
    technical: list[str] = []
    for verb in TECH_VERBS:
        technical += [verb, *_verb_forms(verb)]
    for noun in TECH_NOUNS:
        technical += [noun] if noun.endswith("s") else [noun, _plural(noun)]
    technical += TECH_TERMS
    top: list[str] = []
    hot = iter(HOT_WORDS)
    for position, word in enumerate(dict.fromkeys(FUNCTION_WORDS)):
        if position >= 30 and position % 6 == 0:
            top.append(next(hot, word))
        top.append(word)
    top.extend(hot)
    top = list(dict.fromkeys(top))
    middle = [w for w in dict.fromkeys(COMMON_WORDS + technical) if w not in set(top)]
    rng.shuffle(middle)
    known = top + middle
    tail = _pseudo_words(PSEUDO_WORDS, set(known), rng)
    words = known + tail
    weights = [1.0 / (rank**ZIPF_EXPONENT) for rank in range(1, len(words) + 1)]
    content_pairs = [
        (w, weight) for w, weight in zip(words, weights, strict=True) if w not in STOPWORDS and len(w) >= 3
    ]
    content = [w for w, _ in content_pairs]
    return Vocabulary(
        words=words,
        cum_weights=list(accumulate(weights)),
        content=content,
        content_cum_weights=list(accumulate(weight for _, weight in content_pairs)),
        tail_start=len(content) - len(tail),
    )


# ---------------------------------------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------------------------------------


@dataclass
class Corpus:
    """One organization's threads and messages, without the organization id (each shape's ``init`` makes
    its own). Generated once and loaded into both databases, so both shapes search the same text."""

    thread_ids: list[str]
    thread_titles: list[str]
    thread_metadata: list[dict[str, str]]
    thread_counts: list[int]
    thread_first: list[datetime | None]
    thread_last: list[datetime | None]
    # (id, thread index, role, content, created_at), in id (= time) order
    messages: list[tuple[str, int, str, str, datetime]]
    identifiers: list[str] = field(default_factory=list)


def _sentences(words: list[str], rng: Random) -> str:
    """Sentences of 6-14 words: capitals and full stops cost nothing to search but make snippets real."""
    parts: list[str] = []
    start = 0
    while start < len(words):
        end = start + rng.randint(6, 14)
        chunk = words[start:end]
        parts.append(chunk[0].capitalize() + (" " + " ".join(chunk[1:]) if len(chunk) > 1 else "") + ".")
        start = end
    return " ".join(parts)


def generate_corpus(
    vocab: Vocabulary, rng: Random, n_threads: int, n_messages: int, end: datetime, progress: str
) -> Corpus:
    """Messages spread over ``CORPUS_DAYS`` days and over threads of Pareto-distributed sizes (most threads
    short, a few with thousands of messages), as an assistant product's history looks."""
    start = end - timedelta(days=CORPUS_DAYS)
    thread_ids = [new_id("thr") for _ in range(n_threads)]
    titles = [
        " ".join(rng.choices(vocab.content, cum_weights=vocab.content_cum_weights, k=rng.randint(2, 7)))
        for _ in range(n_threads)
    ]
    projects = vocab.content[vocab.tail_start : vocab.tail_start + 40]
    metadata = [
        {"project": rng.choice(projects), "env": rng.choice(("production", "staging", "development"))}
        for _ in range(n_threads)
    ]
    thread_weights = list(accumulate(rng.paretovariate(1.3) for _ in range(n_threads)))
    counts = [0] * n_threads
    first: list[datetime | None] = [None] * n_threads
    last: list[datetime | None] = [None] * n_threads
    messages: list[tuple[str, int, str, str, datetime]] = []
    identifiers: set[str] = set()
    step = timedelta(days=CORPUS_DAYS) / max(n_messages, 1)
    chunk_size = 20_000
    for offset in range(0, n_messages, chunk_size):
        size = min(chunk_size, n_messages - offset)
        roles = rng.choices(ROLES, weights=ROLE_WEIGHTS, k=size)
        lengths = [rng.randint(*ROLE_LENGTHS[role]) for role in roles]
        words = rng.choices(vocab.words, cum_weights=vocab.cum_weights, k=sum(lengths))
        thread_of = rng.choices(range(n_threads), cum_weights=thread_weights, k=size)
        position = 0
        for i in range(size):
            text = words[position : position + lengths[i]]
            position += lengths[i]
            if rng.random() < COLLOCATION_PROBABILITY:
                text.insert(rng.randrange(len(text) + 1), rng.choice(COLLOCATIONS))
            if rng.random() < IDENTIFIER_PROBABILITY:
                identifier = f"inc{rng.randrange(IDENTIFIER_SPACE):05d}"
                identifiers.add(identifier)
                text.insert(rng.randrange(len(text) + 1), identifier)
            created = start + step * (offset + i)
            thread = thread_of[i]
            counts[thread] += 1
            first[thread] = first[thread] or created
            last[thread] = created
            messages.append((new_id("msg"), thread, roles[i], _sentences(text, rng), created))
        print(f"\r  {progress}: {offset + size:,}/{n_messages:,} messages", end="", file=sys.stderr)
    print(file=sys.stderr)
    return Corpus(
        thread_ids=thread_ids,
        thread_titles=[title.capitalize() for title in titles],
        thread_metadata=metadata,
        thread_counts=counts,
        thread_first=first,
        thread_last=last,
        messages=messages,
        identifiers=sorted(identifiers),
    )


def _thread_times(corpus: Corpus, index: int, default: datetime) -> tuple[datetime, datetime]:
    return corpus.thread_first[index] or default, corpus.thread_last[index] or default


# ---------------------------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchQuery:
    kind: str
    path: str
    q: str
    page: int = 1


# Share of each class in the query set. "common" words match tens of thousands of messages, "rare" ones a
# handful to a few hundred; every bare word is also a prefix; "prefix" is a truncated word as typed.
QUERY_MIX = {
    "common": 14,
    "medium": 12,
    "rare": 12,
    "two-words": 12,
    "prefix": 10,
    "phrase": 12,
    "or": 9,
    "exclusion": 9,
    "page-2-5": 6,
    "threads": 4,
}


def _allocate(total: int, shares: dict[str, int]) -> dict[str, int]:
    """Largest-remainder split, so the class counts add up to exactly ``--queries``."""
    whole = sum(shares.values())
    exact = {kind: total * share / whole for kind, share in shares.items()}
    counts = {kind: math.floor(value) for kind, value in exact.items()}
    by_remainder = sorted(exact, key=lambda kind: exact[kind] - counts[kind], reverse=True)
    for kind in by_remainder[: total - sum(counts.values())]:
        counts[kind] += 1
    return counts


def build_queries(count: int, vocab: Vocabulary, corpus: Corpus, rng: Random) -> list[SearchQuery]:
    """A fixed query set drawn by frequency rank (common, medium, rare), plus the operators of the query
    language. Phrases come from the collocations or from a random stored message, as a user quoting what
    they remember; stop-word-only words and prefixes are avoided (PostgreSQL ignores them, SQLite not)."""
    content = vocab.content

    def word(lo: int, hi: int) -> str:
        return content[rng.randrange(lo, min(hi, len(content)))]

    def rare() -> str:
        if corpus.identifiers and rng.random() < 0.5:
            return rng.choice(corpus.identifiers)
        return word(vocab.tail_start + 1000, len(content))

    def phrase() -> str:
        if rng.random() < 0.6:
            return f'"{rng.choice(COLLOCATIONS)}"'
        while True:
            words = WORD.findall(rng.choice(corpus.messages)[3].lower())
            length = rng.choice((2, 2, 3))
            at = rng.randrange(max(1, len(words) - length))
            picked = words[at : at + length]
            if len(picked) >= 2 and any(w not in STOPWORDS for w in picked):
                return '"' + " ".join(picked) + '"'

    def prefix() -> str:
        while True:
            candidate = word(0, 500)
            if len(candidate) >= 7:
                cut = candidate[: rng.randint(3, 5)]
                if cut not in STOPWORDS:
                    return cut

    def alternatives() -> str:
        return " OR ".join(word(10, 800) for _ in range(rng.choice((2, 2, 3))))

    def exclusion() -> str:
        excluded = f'"{rng.choice(COLLOCATIONS)}"' if rng.random() < 0.2 else word(0, 400)
        return f"{word(0, 60)} -{excluded}"

    makers: dict[str, Callable[[], SearchQuery]] = {
        "common": lambda: SearchQuery("common", MESSAGES_PATH, word(0, 30)),
        "medium": lambda: SearchQuery("medium", MESSAGES_PATH, word(100, 600)),
        "rare": lambda: SearchQuery("rare", MESSAGES_PATH, rare()),
        "two-words": lambda: SearchQuery("two-words", MESSAGES_PATH, f"{word(0, 200)} {word(50, 1500)}"),
        "prefix": lambda: SearchQuery("prefix", MESSAGES_PATH, prefix()),
        "phrase": lambda: SearchQuery("phrase", MESSAGES_PATH, phrase()),
        "or": lambda: SearchQuery("or", MESSAGES_PATH, alternatives()),
        "exclusion": lambda: SearchQuery("exclusion", MESSAGES_PATH, exclusion()),
        "page-2-5": lambda: SearchQuery("page-2-5", MESSAGES_PATH, word(0, 100), page=rng.randint(2, 5)),
        "threads": lambda: SearchQuery("threads", THREADS_PATH, word(0, 1000)),
    }
    queries = [makers[kind]() for kind, n in _allocate(count, QUERY_MIX).items() for _ in range(n)]
    rng.shuffle(queries)
    return queries


# ---------------------------------------------------------------------------------------------------------
# Seeding. Plain INSERTs into the product's tables: SQLite's triggers fill FTS5 exactly as the product's
# own writes do; PostgreSQL computes the generated tsvector column on COPY.
# ---------------------------------------------------------------------------------------------------------

THREAD_COLUMNS = (
    "id",
    "organization_id",
    "title",
    "metadata",
    "search_text",
    "message_count",
    "created_at",
    "updated_at",
)
MESSAGE_COLUMNS = (
    "id",
    "organization_id",
    "thread_id",
    "run_id",
    "role",
    "content",
    "metadata",
    "created_at",
)
SEED_BATCH = 100_000
SQLITE_INSERT_THREAD = (
    "INSERT INTO threads (id, organization_id, title, metadata, search_text, message_count, created_at, "
    "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
SQLITE_INSERT_MESSAGE = (
    "INSERT INTO messages (id, organization_id, thread_id, run_id, role, content, metadata, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def _thread_records(corpus: Corpus, org_id: str, end: datetime) -> Iterator[tuple[Any, ...]]:
    for i, thread_id in enumerate(corpus.thread_ids):
        created, updated = _thread_times(corpus, i, end)
        meta = corpus.thread_metadata[i]
        search_text = "\n".join([corpus.thread_titles[i], *meta.values()])
        yield (
            thread_id,
            org_id,
            corpus.thread_titles[i],
            json.dumps(meta),
            search_text,
            corpus.thread_counts[i],
            created,
            updated,
        )


def _message_records(corpus: Corpus, org_id: str) -> Iterator[tuple[Any, ...]]:
    ids = corpus.thread_ids
    for message_id, thread, role, content, created in corpus.messages:
        yield (message_id, org_id, ids[thread], None, role, content, "{}", created)


def _batches(records: Iterator[tuple[Any, ...]], size: int) -> Iterator[list[tuple[Any, ...]]]:
    batch: list[tuple[Any, ...]] = []
    for record in records:
        batch.append(record)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _sqlite_time(value: datetime) -> str:
    """The product's SQLite format: naive UTC text with microseconds."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def seed_sqlite(path: Path, data: Sequence[tuple[str, Corpus]], end: datetime) -> None:
    """executemany in 100,000-row transactions with journaling and fsync off: the database is temporary and
    a crash only fails the run. The FTS5 triggers do the indexing, as for the product's own inserts; the
    journal mode goes back to WAL, which the server expects."""
    total = sum(len(corpus.messages) for _, corpus in data)
    done = 0
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for pragma in ("journal_mode=OFF", "synchronous=OFF", "cache_size=-1000000", "temp_store=MEMORY"):
            conn.execute(f"PRAGMA {pragma}")
        for org_id, corpus in data:
            conn.execute("BEGIN")
            conn.executemany(
                SQLITE_INSERT_THREAD,
                (
                    (*record[:6], _sqlite_time(record[6]), _sqlite_time(record[7]))
                    for record in _thread_records(corpus, org_id, end)
                ),
            )
            conn.execute("COMMIT")
            for batch in _batches(_message_records(corpus, org_id), SEED_BATCH):
                conn.execute("BEGIN")
                conn.executemany(SQLITE_INSERT_MESSAGE, ((*r[:7], _sqlite_time(r[7])) for r in batch))
                conn.execute("COMMIT")
                done += len(batch)
                print(f"\r  sqlite: {done:,}/{total:,} messages", end="", file=sys.stderr)
        print(file=sys.stderr)
        conn.execute("PRAGMA journal_mode=WAL")
        stored = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    finally:
        conn.close()
    if stored != total:
        raise BenchError(f"sqlite: {stored:,} messages stored, {total:,} expected")


async def seed_postgres(url: str, data: Sequence[tuple[str, Corpus]], end: datetime) -> None:
    """COPY (binary, via asyncpg) with the GIN index dropped and then re-created from its own definition
    (read from pg_indexes, so it is whatever the migrations made): building a GIN index once is several
    times faster than maintaining it row by row, and the result is the compact index a REINDEX gives.
    VACUUM ANALYZE afterwards, as autovacuum would have done on a live database."""
    total = sum(len(corpus.messages) for _, corpus in data)
    done = 0
    conn = await asyncpg.connect(url)
    try:
        gin = await conn.fetch(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename = 'messages' AND indexdef ILIKE '%USING gin%'"
        )
        for index in gin:
            await conn.execute(f'DROP INDEX "{index["indexname"]}"')
        for org_id, corpus in data:
            await conn.copy_records_to_table(
                "threads", records=list(_thread_records(corpus, org_id, end)), columns=list(THREAD_COLUMNS)
            )
            for batch in _batches(_message_records(corpus, org_id), SEED_BATCH):
                await conn.copy_records_to_table("messages", records=batch, columns=list(MESSAGE_COLUMNS))
                done += len(batch)
                print(f"\r  postgres: {done:,}/{total:,} messages", end="", file=sys.stderr)
        print(file=sys.stderr)
        await conn.execute("SET maintenance_work_mem = '1GB'")
        for index in gin:
            started = time.perf_counter()
            await conn.execute(index["indexdef"])
            print(
                f"  postgres: {index['indexname']} built in {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
            )
        await conn.execute("VACUUM (ANALYZE) threads")
        await conn.execute("VACUUM (ANALYZE) messages")
        stored = await conn.fetchval("SELECT count(*) FROM messages")
    finally:
        await conn.close()
    if stored != total:
        raise BenchError(f"postgres: {stored:,} messages stored, {total:,} expected")


# ---------------------------------------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------------------------------------


@dataclass
class Sample:
    """One query's measured HTTP latency and, when measured, the same search run in-process: the service
    call (transaction, SQL, response model; no HTTP, auth or JSON) and each SQL statement's time."""

    kind: str
    q: str
    page: int
    path: str
    http_ms: float
    total_results: int
    service_ms: float | None = None
    gin_service_ms: float | None = None  # PostgreSQL: the same, the GIN index alone (the baseline)
    statements_ms: list[float] = field(default_factory=list)

    @property
    def sql_ms(self) -> float | None:
        return sum(self.statements_ms) if self.statements_ms else None


def _params(query: SearchQuery) -> dict[str, str | int]:
    params: dict[str, str | int] = {"q": query.q, "limit": PAGE_LIMIT}
    if query.page != 1:
        params["page"] = query.page
    return params


def measure_http(base_url: str, secret_key: str, queries: Sequence[SearchQuery]) -> list[Sample]:
    """Sequential requests on one keep-alive connection, after a full warm-up pass over the same queries
    (so caches hold what the measured pass reads, as they would for a server in steady use). The garbage
    collector is off while timing: the corpus held in this process would otherwise make a collection
    pause show up as server latency."""
    headers = {"Authorization": f"Bearer {secret_key}"}
    samples: list[Sample] = []
    with httpx.Client(base_url=base_url, headers=headers, timeout=120.0) as client:
        for measured in (False, True):
            for query in queries:
                gc.disable()
                try:
                    started = time.perf_counter()
                    response = client.get(query.path, params=_params(query))
                    elapsed_ms = (time.perf_counter() - started) * 1000
                finally:
                    gc.enable()
                if response.status_code != 200:
                    raise BenchError(
                        f"{query.path}?q={query.q!r} answered {response.status_code}: {response.text[:500]}"
                    )
                body = response.json()
                total = int(body["pagination"]["totalResults"])
                if total > (query.page - 1) * PAGE_LIMIT and not body["data"]:
                    raise BenchError(f"{query.q!r}: {total} results but page {query.page} is empty")
                if measured:
                    samples.append(Sample(query.kind, query.q, query.page, query.path, elapsed_ms, total))
    return samples


async def measure_in_process(
    url: str, dialect: str, org_id: str, samples: Sequence[Sample]
) -> list[tuple[str, Any]]:
    """The second figure: the same queries through the product's search service (the function the endpoint
    calls: transaction, backend SQL, response model), in this process, without HTTP, authentication or
    JSON encoding, after a warm-up pass. Statement times come from SQLAlchemy's cursor events, listened to
    on the Engine class so no private attribute of the product's Database is needed: they are the
    database's share (asyncpg fetches every row inside ``execute``; SQLite does all the counting and
    ranking work before the first row). Returns, per sample, its slowest statement and parameters, for
    EXPLAIN."""
    db = Database(normalize_database_url(url))
    backend = search_backend(dialect)
    statements: list[tuple[str, Any, float]] = []

    def before(conn: Connection, _cursor: Any, _sql: str, _params: Any, _context: Any, _many: bool) -> None:
        conn.info["bench_started"] = time.perf_counter()

    def after(conn: Connection, _cursor: Any, sql: str, params: Any, _context: Any, _many: bool) -> None:
        started = conn.info.pop("bench_started", None)
        if started is not None:
            statements.append((sql, params, time.perf_counter() - started))

    event.listen(Engine, "before_cursor_execute", before)
    event.listen(Engine, "after_cursor_execute", after)
    slowest: list[tuple[str, Any]] = []
    try:
        for measured in (False, True):
            for sample in samples:
                statements.clear()
                elapsed_ms = await _search_in_process(db, backend, org_id, sample, "in-process")
                searches = [s for s in statements if not s[0].lstrip().upper().startswith("BEGIN")]
                if measured and searches:
                    sample.service_ms = elapsed_ms
                    sample.statements_ms = [seconds * 1000 for _, _, seconds in searches]
                    sql, params, _ = max(searches, key=lambda s: s[2])
                    slowest.append((sql, params))
                elif measured:
                    raise BenchError("no SQL statement was seen: the cursor events did not fire")
    finally:
        event.remove(Engine, "before_cursor_execute", before)
        event.remove(Engine, "after_cursor_execute", after)
        await db.dispose()
    return slowest


async def _search_in_process(db: Database, backend: Any, org_id: str, sample: Sample, label: str) -> float:
    """One search through the service, timed (ms), its ``totalResults`` checked against the HTTP answer."""
    page = PageParams(page=sample.page, limit=PAGE_LIMIT)
    gc.disable()
    try:
        started = time.perf_counter()
        if sample.path == THREADS_PATH:
            found: Any = await service.search_threads(db, backend, org_id, sample.q, page)
        else:
            found = await service.search_messages(db, backend, org_id, sample.q, MessageFilter(), page)
        elapsed_ms = (time.perf_counter() - started) * 1000
    finally:
        gc.enable()
    total = found.pagination.total_results
    if total != sample.total_results:
        raise BenchError(f"{sample.q!r}: {total} results {label}, {sample.total_results} by HTTP")
    return elapsed_ms


class GinOnlySearch(PostgresSearch):
    """The baseline: message search as it was before postings, every match found and counted by the GIN
    index (``count(*)`` and the newest 200 through ``@@``)."""

    async def messages(
        self, conn: Any, organization_id: str, query: Any, where: MessageFilter, page: PageParams
    ) -> Hits:
        filters = [messages_table.c.organization_id == organization_id]
        gin = postgres_search._Matches(conn, messages_table, "content", filters, query)
        return await page_of(gin, query, "content", page)


async def measure_gin_baseline(url: str, org_id: str, samples: Sequence[Sample]) -> None:
    """The same queries in-process through ``GinOnlySearch``, warm-up pass then measured into
    ``gin_service_ms``. Every ``totalResults`` must equal the postings' answer over HTTP: a check of the
    postings against the GIN index at 1,000,000 messages."""
    db = Database(normalize_database_url(url))
    gin = GinOnlySearch()
    try:
        for measured in (False, True):
            for sample in samples:
                elapsed_ms = await _search_in_process(db, gin, org_id, sample, "through GIN alone")
                if measured:
                    sample.gin_service_ms = elapsed_ms
    finally:
        await db.dispose()


async def explain_postgres(url: str, statements: Sequence[tuple[str, Any]]) -> list[str]:
    """EXPLAIN (ANALYZE, BUFFERS) of given statements with their recorded parameters, so the results file
    says *why* the slowest queries are slow, not only that they are."""
    conn = await asyncpg.connect(url)
    try:
        plans = []
        for sql, params in statements:
            rows = await conn.fetch("EXPLAIN (ANALYZE, BUFFERS) " + sql, *(params or ()))
            plans.append("\n".join(row[0] for row in rows))
        return plans
    finally:
        await conn.close()


def percentile(values: Sequence[float], fraction: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), so p99 of 300 samples is not just
    the third-largest value rounded one way or the other."""
    ordered = sorted(values)
    k = (len(ordered) - 1) * fraction
    low = math.floor(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def summarize(samples: Sequence[Sample]) -> dict[str, Any]:
    http = [s.http_ms for s in samples]
    sql = [s.sql_ms for s in samples if s.sql_ms is not None]
    in_process = [s.service_ms for s in samples if s.service_ms is not None]
    summary: dict[str, Any] = {
        "n": len(samples),
        "p50_ms": percentile(http, 0.5),
        "p90_ms": percentile(http, 0.9),
        "p99_ms": percentile(http, 0.99),
        "max_ms": max(http),
        "mean_total_results": sum(s.total_results for s in samples) / len(samples),
    }
    if sql:
        summary |= {"sql_p50_ms": percentile(sql, 0.5), "sql_p99_ms": percentile(sql, 0.99)}
    if in_process:
        summary |= {
            "service_p50_ms": percentile(in_process, 0.5),
            "service_p99_ms": percentile(in_process, 0.99),
        }
    gin = [s.gin_service_ms for s in samples if s.gin_service_ms is not None]
    if gin:
        summary |= {"gin_service_p50_ms": percentile(gin, 0.5), "gin_service_p99_ms": percentile(gin, 0.99)}
    return summary


# ---------------------------------------------------------------------------------------------------------
# One shape
# ---------------------------------------------------------------------------------------------------------


def run_shape(
    shape: str,
    args: argparse.Namespace,
    corpora: tuple[Corpus, Corpus],
    queries: Sequence[SearchQuery],
    end: datetime,
    root: Path,
) -> dict[str, Any]:
    with ExitStack() as stack:
        data_dir = root / shape
        data_dir.mkdir()
        stack.callback(_remove_tree, data_dir)  # free the disk before the next shape, not only at the end
        if shape == "postgres":
            url = stack.enter_context(postgres_database(args.pg_admin_url, "search"))
            env = clean_env(THREADLINE_DATA_DIR=str(data_dir), THREADLINE_DATABASE_URL=url)
        else:
            url = f"sqlite:///{data_dir / 'threadline.db'}"
            env = clean_env(THREADLINE_DATA_DIR=str(data_dir))
        init = json.loads(run_checked([*THREADLINE, "init", "--json"], env))
        secret_key, org_id = init["secretKey"], init["organization"]["id"]
        other = json.loads(run_checked([*THREADLINE, "orgs", "create", "other", "--json"], env))
        # Before `serve`: without Redis, a running server would not hear about the change.
        run_checked([*THREADLINE, "orgs", "set-limit", org_id, "--requests-per-minute", str(RATE_LIMIT)], env)

        data = [(org_id, corpora[0]), (other["organization"]["id"], corpora[1])]
        print(f"{shape}: seeding", file=sys.stderr)
        started = time.perf_counter()
        if shape == "postgres":
            asyncio.run(seed_postgres(url, data, end))
        else:
            seed_sqlite(data_dir / "threadline.db", data, end)
        seed_seconds = time.perf_counter() - started
        print(f"{shape}: seeded in {seed_seconds:.1f} s", file=sys.stderr)
        sealing: dict[str, Any] = {}
        if shape == "postgres":
            sealing = asyncio.run(seal_postgres(url))
        database = asyncio.run(_database_facts(url)) if shape == "postgres" else _sqlite_facts(data_dir)

        port, intake_port = free_port(), free_port()
        with running_server(
            f"threadline-{shape}",
            [*THREADLINE, "serve", "--port", str(port), "--intake-port", str(intake_port)],
            env,
            f"http://127.0.0.1:{port}/readyz",
            data_dir,
        ) as server:
            print(f"{shape}: {len(queries)} queries, warm-up pass then measured pass", file=sys.stderr)
            samples = measure_http(f"http://127.0.0.1:{port}", secret_key, queries)
            server.ensure_running()
            problems = server.problems()
        if problems:
            print(
                f"warning: {shape} server logged {len(problems)} error line(s): {problems[0]}",
                file=sys.stderr,
            )

        explains: list[dict[str, Any]] = []
        if args.in_process:
            print(f"{shape}: same queries in-process (service and SQL times)", file=sys.stderr)
            dialect = "postgresql" if shape == "postgres" else "sqlite"
            slowest = asyncio.run(measure_in_process(url, dialect, org_id, samples))
            if shape == "postgres":
                print(f"{shape}: the same through the GIN index alone (baseline)", file=sys.stderr)
                asyncio.run(measure_gin_baseline(url, org_id, samples))
                worst = sorted(range(len(samples)), key=lambda i: samples[i].sql_ms or 0.0, reverse=True)[:3]
                plans = asyncio.run(explain_postgres(url, [slowest[i] for i in worst]))
                explains = [
                    {"kind": samples[i].kind, "q": samples[i].q, "statement": slowest[i][0], "plan": plan}
                    for i, plan in zip(worst, plans, strict=True)
                ]

    kinds = list(QUERY_MIX)
    slow = sorted(samples, key=lambda s: s.http_ms, reverse=True)[:10]
    return {
        "seed_seconds": seed_seconds,
        "sealing": sealing,
        "messages": len(corpora[0].messages),
        "other_org_messages": len(corpora[1].messages),
        "database": database,
        "server_log_errors": problems,
        "overall": summarize(samples),
        "classes": {
            k: summarize([s for s in samples if s.kind == k])
            for k in kinds
            if any(s.kind == k for s in samples)
        },
        "slowest": [asdict(s) | {"sql_ms": s.sql_ms} for s in slow],
        "explain": explains,
        "samples": [asdict(s) for s in samples],
        "target_met": summarize(samples)["p99_ms"] < TARGET_P99_MS,
    }


async def seal_postgres(url: str) -> dict[str, Any]:
    """Seal the whole corpus into search postings before the server starts, with the code every API
    process and worker runs every two seconds (``search/postings.py``, ``threadline/chores.py``): a live
    server seals as messages arrive, a bulk COPY is sealed at once. Then VACUUM ANALYZE, as autovacuum
    would."""
    db = Database(normalize_database_url(url))
    try:
        started = time.perf_counter()
        report = await postings.seal(db)
        seconds = time.perf_counter() - started
    finally:
        await db.dispose()
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("VACUUM (ANALYZE) search_postings")
        size = await conn.fetchval("SELECT pg_total_relation_size('search_postings')")
        segments = await conn.fetchval("SELECT count(*) FROM search_segments")
    finally:
        await conn.close()
    print(
        f"  postgres: sealed {report.messages:,} messages in {seconds:.1f} s ({report.merges} merges, "
        f"{segments} segments, postings {size / 2**20:.0f} MiB)",
        file=sys.stderr,
    )
    return {
        "seconds": seconds,
        "messages": report.messages,
        "merges": report.merges,
        "segments": segments,
        "postings_bytes": size,
    }


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _sqlite_facts(data_dir: Path) -> dict[str, Any]:
    size = sum(p.stat().st_size for p in data_dir.glob("threadline.db*"))
    return {"sqlite_version": sqlite3.sqlite_version, "size_bytes": size}


async def _database_facts(url: str) -> dict[str, Any]:
    """The settings that decide PostgreSQL's search speed, recorded because the server's configuration is
    not ours to tune here (defaults on this machine)."""
    conn = await asyncpg.connect(url)
    try:
        facts: dict[str, Any] = {"version": await conn.fetchval("SHOW server_version")}
        for setting in (
            "shared_buffers",
            "work_mem",
            "effective_cache_size",
            "max_parallel_workers_per_gather",
        ):
            facts[setting] = await conn.fetchval(f"SHOW {setting}")
        facts["size_bytes"] = await conn.fetchval("SELECT pg_database_size(current_database())")
        return facts
    finally:
        await conn.close()


# ---------------------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--messages", type=int, default=1_000_000, help="messages in the searched organization"
    )
    parser.add_argument("--threads", type=int, default=10_000, help="threads the messages are spread over")
    parser.add_argument("--shape", choices=[*SHAPES, "both"], default="both", help="database(s) to measure")
    parser.add_argument("--queries", type=int, default=300, help="measured queries (after as many warm-up)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the corpus and the query set")
    parser.add_argument(
        "--no-in-process",
        dest="in_process",
        action="store_false",
        help="skip the second figure (the same queries in-process, SQL times, EXPLAIN)",
    )
    parser.add_argument(
        "--pg-admin-url",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="where to CREATE and DROP the benchmark's own PostgreSQL database",
    )
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "search.json", help="results JSON file")
    args = parser.parse_args()
    if args.messages < 1 or args.threads < 1 or args.queries < 1:
        parser.error("--messages, --threads and --queries must be >= 1")
    return args


def benchmark(args: argparse.Namespace, stack: ExitStack) -> dict[str, Any]:
    root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="threadline-bench-search-")))
    shapes = SHAPES if args.shape == "both" else (args.shape,)
    code_at_start = _code_version()  # others may change the product while a 10-minute run goes on
    end = datetime.now(UTC).replace(microsecond=0)
    started = time.perf_counter()
    vocab = build_vocabulary()
    rng = Random(args.seed)
    print(f"generating {args.messages:,} messages ({len(vocab.words):,}-word vocabulary)", file=sys.stderr)
    corpora = (
        generate_corpus(vocab, rng, args.threads, args.messages, end, "main organization"),
        generate_corpus(
            vocab,
            rng,
            max(1, args.threads // OTHER_ORG_SHARE),
            max(1, args.messages // OTHER_ORG_SHARE),
            end,
            "other organization",
        ),
    )
    queries = build_queries(args.queries, vocab, corpora[0], Random(args.seed + 1))
    generate_seconds = time.perf_counter() - started
    print(f"generated in {generate_seconds:.1f} s", file=sys.stderr)
    # The corpus lives until both shapes are seeded; frozen, the collector never scans it again.
    gc.collect()
    gc.freeze()
    shape_results = {shape: run_shape(shape, args, corpora, queries, end, root) for shape in shapes}
    return {
        "benchmark": "GET /v1/search/messages (and /v1/search/threads) latency",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "code": {"at_start": code_at_start, "at_end": _code_version()},
        "corpus": {
            "vocabulary_words": len(vocab.words),
            "threads": args.threads,
            "messages": args.messages,
            "other_org_messages": len(corpora[1].messages),
            "generate_seconds": generate_seconds,
        },
        "queries": [asdict(q) for q in queries],
        "shapes": shape_results,
        "goal": {
            "text": TARGET_TEXT,
            "p99_ms": TARGET_P99_MS,
            "met": all(result["target_met"] for result in shape_results.values()),
        },
    }


def _code_version() -> dict[str, Any]:
    """The commit measured, and whether the tree differed from it: latency figures without the code they
    measured cannot be compared with later ones."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=BENCH_DIR, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", "threadline"],
            cwd=BENCH_DIR,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None}
    return {"commit": commit, "threadline_modified": bool(status.strip())}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _ratio(baseline: float | None, ours: float | None) -> str:
    return "-" if baseline is None or not ours else f"{baseline / ours:.1f}x"


def report(results: dict[str, Any]) -> str:
    blocks = []
    header = ["class", "n", "p50 ms", "p90 ms", "p99 ms", "max ms", "mean results", "sql p50", "sql p99"]
    header += ["service p50", "service p99", "GIN p50", "GIN p99", "p99 ratio"]
    for shape, result in results["shapes"].items():
        rows = []
        for kind, s in [*result["classes"].items(), ("all", result["overall"])]:
            rows.append(
                [
                    kind,
                    str(s["n"]),
                    _ms(s["p50_ms"]),
                    _ms(s["p90_ms"]),
                    _ms(s["p99_ms"]),
                    _ms(s["max_ms"]),
                    f"{s['mean_total_results']:,.0f}",
                    _ms(s.get("sql_p50_ms")),
                    _ms(s.get("sql_p99_ms")),
                    _ms(s.get("service_p50_ms")),
                    _ms(s.get("service_p99_ms")),
                    _ms(s.get("gin_service_p50_ms")),
                    _ms(s.get("gin_service_p99_ms")),
                    _ratio(s.get("gin_service_p99_ms"), s.get("service_p99_ms")),
                ]
            )
        size_mb = result["database"]["size_bytes"] / 1e6
        title = (
            f"{shape}: {result['messages']:,} messages (+{result['other_org_messages']:,} in another "
            f"organization), seeded in {result['seed_seconds']:.1f} s, database {size_mb:,.0f} MB"
        )
        if result.get("sealing"):
            sealing = result["sealing"]
            title += (
                f"\nsealed into postings in {sealing['seconds']:.1f} s ({sealing['segments']} segments, "
                f"{sealing['postings_bytes'] / 1e6:,.0f} MB)"
            )
        slowest = "\n".join(
            f"  {s['http_ms']:8.1f} ms  {s['kind']:<10} {s['q']!r}"
            + (f" page {s['page']}" if s["page"] != 1 else "")
            + f"  ({s['total_results']:,} results)"
            for s in result["slowest"][:5]
        )
        verdict = "MET" if result["target_met"] else "NOT MET"
        blocks.append(
            f"{title}\n{format_table(header, rows)}\nslowest:\n{slowest}\n"
            f"{shape}: p99 {result['overall']['p99_ms']:.1f} ms at {result['messages']:,} messages; "
            f"target {TARGET_TEXT}: {verdict}"
        )
    blocks.append(
        "(ms: HTTP round trip from this process, one request at a time; "
        "sql: the same queries' SQL statements, run in-process; service: the search service in-process; "
        "GIN: the same with every match found and counted by the GIN index, as before postings (the "
        "baseline); p99 ratio: GIN / service)"
    )
    return "\n\n".join(blocks)


def main() -> int:
    return run_main(parse_args(), benchmark, report, (OSError, asyncpg.PostgresError))


if __name__ == "__main__":
    sys.exit(main())
