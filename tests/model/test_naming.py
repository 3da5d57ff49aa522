from __future__ import annotations

import pytest

from loom.model import naming


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
    assert naming.snake(model) == snake


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
    assert naming.plural_snake(model) == plural


def test_pascal_and_members() -> None:
    assert naming.pascal("registerCustomer") == "RegisterCustomer"
    assert naming.pascal("transfer") == "Transfer"
    assert naming.upper_snake("Checking") == "CHECKING"
    assert naming.upper_snake("InProgress") == "IN_PROGRESS"
    assert naming.id_type("Account") == "AccountId"


def test_keywords_are_escaped() -> None:
    assert naming.ident("from") == "from_"
    assert naming.ident("class") == "class_"
    assert naming.ident("fromAccount") == "from_account"
    assert naming.ident("self") == "self_"
    assert naming.ident("amount") == "amount"
