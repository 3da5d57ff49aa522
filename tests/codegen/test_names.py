from __future__ import annotations

import pytest

from loom.codegen.python import names


@pytest.mark.parametrize(
    ("model", "snake"),
    [
        ("creditLimit", "credit_limit"),
        ("openedAt", "opened_at"),
        ("looseTransfer", "loose_transfer"),
        ("HTTPServer", "http_server"),
        ("customerId", "customer_id"),
        ("Account", "account"),
        ("already_snake", "already_snake"),
        ("v2Name", "v2_name"),
    ],
)
def test_snake(model: str, snake: str) -> None:
    assert names.snake(model) == snake


@pytest.mark.parametrize(
    ("model", "plural"),
    [
        ("Customer", "customers"),
        ("Category", "categories"),
        ("Address", "addresses"),
        ("Box", "boxes"),
        ("Person", "persons"),
        ("Day", "days"),
        ("Match", "matches"),
        ("OrderLine", "order_lines"),
    ],
)
def test_plural_snake(model: str, plural: str) -> None:
    assert names.plural_snake(model) == plural


def test_pascal_and_members() -> None:
    assert names.pascal("registerCustomer") == "RegisterCustomer"
    assert names.pascal("transfer") == "Transfer"
    assert names.upper_snake("Checking") == "CHECKING"
    assert names.upper_snake("InProgress") == "IN_PROGRESS"
    assert names.id_type("Account") == "AccountId"


def test_keywords_are_escaped() -> None:
    assert names.ident("from") == "from_"
    assert names.ident("class") == "class_"
    assert names.ident("fromAccount") == "from_account"
    assert names.ident("self") == "self_"
    assert names.ident("amount") == "amount"
