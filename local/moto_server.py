"""
moto's server, with two fixes that make it behave like DynamoDB for this project's tests.

1. Requests are served one at a time. moto's threaded server runs concurrent requests against
   the same in-memory tables without a lock, so two TransactWriteItems can both pass their
   conditions (DynamoDB isolates them) and a failed one can roll back another's writes.
2. TransactWriteItems checks every condition first and writes only when all hold, as DynamoDB
   does, instead of deep-copying the whole table (and its stream records) before each
   transaction to roll back: that copy made each transaction cost O(table size) and grew the
   server to gigabytes over a test run.

3. TransactWriteItems honours `ClientRequestToken` as DynamoDB does: the same token with the same
   items within 10 minutes succeeds again without writing anything (so an SDK retry of a
   transaction that had committed never counts twice); with other items it fails with
   IdempotentParameterMismatchException.

With `--exit-when-stdin-closes` the server also ends when its standard input reaches end of file:
the Node process that started it holds the other end, so the server never outlives it, even when
it was killed outright (`npm start` runs it in its own process group, out of Ctrl-C's reach, and
stops it itself after everything that calls it: local/emulator.ts).

Exit code 3 means moto is not importable by this Python; the caller then falls back to the
`moto_server` command.
"""

import argparse
import copy
import os
import sys
import threading

try:
    from moto.dynamodb.exceptions import (
        ConditionalCheckFailed,
        MockValidationException,
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )
    from moto.dynamodb.exceptions import DynamodbException, ERROR_TYPE_PREFIX
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.responses import DynamoHandler, ActionResult
    from moto.dynamodb.comparisons import get_filter_expression
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import run_simple
except ImportError as error:  # pragma: no cover
    print(f"moto is not importable: {error}", file=sys.stderr)
    sys.exit(3)


def _key_of(table, op_type, op):
    if op_type == "Put":
        attrs = op["Item"]
        key = {table.hash_key_attr: attrs[table.hash_key_attr]}
        if table.range_key_attr is not None:
            key[table.range_key_attr] = attrs[table.range_key_attr]
        return key
    return op["Key"]


def transact_write_items(self, transact_items):
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    seen = set()
    plans = []
    errors = []
    # Phase 1: validate and evaluate every condition against the unchanged state.
    for item in transact_items:
        if len(list(item.keys())) > 1:
            raise TransactWriteSingleOpException
        op_type, op = next(iter(item.items()))
        if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
            raise MockValidationException("Unsupported transaction operation")
        table = self.get_table(op["TableName"])
        key = _key_of(table, op_type, op)
        unique = (str(op["TableName"]), str(dict(sorted(key.items()))))
        if unique in seen:
            raise MultipleTransactionsException()
        seen.add(unique)
        current = self.get_item(op["TableName"], key)
        condition = op.get("ConditionExpression")
        if condition is not None:
            condition_op = get_filter_expression(
                condition, op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
            )
            if not condition_op.expr(current):
                old = None
                if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                    old = current.to_json()["Attributes"]
                errors.append(("ConditionalCheckFailed", "The conditional request failed", old))
                continue
        errors.append((None, None, None))
        plans.append((op_type, op, key, copy.deepcopy(current)))
    if any(code is not None for code, _, _ in errors):
        raise TransactionCanceledException(errors)
    # Phase 2: every condition holds (and nothing else runs meanwhile): apply the writes.
    applied = []
    try:
        for op_type, op, key, before in plans:
            table_name = op["TableName"]
            if op_type == "Put":
                self.put_item(
                    table_name,
                    op["Item"],
                    expression_attribute_names=op.get("ExpressionAttributeNames"),
                    expression_attribute_values=op.get("ExpressionAttributeValues"),
                )
            elif op_type == "Delete":
                self.delete_item(table_name, key)
            elif op_type == "Update":
                self.update_item(
                    table_name,
                    key,
                    update_expression=op["UpdateExpression"],
                    expression_attribute_names=op.get("ExpressionAttributeNames"),
                    expression_attribute_values=op.get("ExpressionAttributeValues"),
                )
            else:
                continue
            applied.append((table_name, key, before))
    except Exception:
        # An invalid write expression: undo what was applied, item by item, then report it.
        for table_name, key, before in reversed(applied):
            if before is None:
                self.delete_item(table_name, key)
            else:
                self.put_item(table_name, before.to_json()["Attributes"])
        raise


DynamoDBBackend.transact_write_items = transact_write_items


class IdempotentParameterMismatch(DynamodbException):
    def __init__(self):
        super().__init__(
            ERROR_TYPE_PREFIX + "IdempotentParameterMismatchException",
            message="The request uses the same client token as a previous, but non-identical request.",
        )


_TOKEN_LIFETIME_SECONDS = 600
_tokens = {}
_handler_transact_write_items = DynamoHandler.transact_write_items


def transact_write_items_idempotent(self):
    import json
    import time

    token = self.body.get("ClientRequestToken")
    if not token:
        return _handler_transact_write_items(self)
    now = time.time()
    for old in [t for t, (_, at) in _tokens.items() if now - at > _TOKEN_LIFETIME_SECONDS]:
        del _tokens[old]
    # Binary attributes arrive as bytes: fingerprinted by their hex.
    fingerprint = json.dumps(
        self.body["TransactItems"], sort_keys=True, default=lambda value: bytes(value).hex()
    )
    seen = _tokens.get(token)
    if seen is not None:
        if seen[0] != fingerprint:
            raise IdempotentParameterMismatch()
        return ActionResult({"ConsumedCapacity": [], "ItemCollectionMetrics": {}})
    result = _handler_transact_write_items(self)
    _tokens[token] = (fingerprint, now)
    return result


DynamoHandler.transact_write_items = transact_write_items_idempotent


class Serialized:
    """WSGI middleware: one request at a time (DynamoDB's isolation, which moto's threads lack)."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self.lock:
            return list(self.app(environ, start_response))


def _exit_when_stdin_closes():
    while sys.stdin.buffer.read(4096):
        pass
    os._exit(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=5000)
    parser.add_argument("--exit-when-stdin-closes", action="store_true")
    args = parser.parse_args()
    if args.exit_when_stdin_closes:
        threading.Thread(target=_exit_when_stdin_closes, daemon=True).start()
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(args.host, args.port, Serialized(app), threaded=True)


if __name__ == "__main__":
    main()
