"""The extern operations of decimal_params.loom (tests/e2e/test_decimal_params.py): `fee` records
the amount it was given, which its generated checks bound to a `decimal(10, 2)` first."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from loom.runtime import decimals


class AccountExterns:
    def fee(self, account: Any, amount: Decimal) -> None:
        account.balance = decimals.sub(account.balance, amount)
        account.credits += 1

    def annotate(self, account: Any, text: str) -> None:
        account.note = text  # the field's string(5) bound is checked after this returns
