"""Read a Spark SQL text as Spark's lexer does: comments, string literals, quoted identifiers, statements and
a leading ``WITH`` are told apart, so a statement's verb is found wherever its text puts it.

Standard library only: it runs where DAGs are parsed and on the Spark driver, with no parser installed.
It reads tokens, not the grammar: enough to find the statement's kind (:func:`main_statement`) and to count
its statements (:func:`split_statements`); Spark itself still parses and analyses the statement when it runs.

* ``-- …`` runs to the end of the line; ``/* … */`` nests, as Spark's bracketed comments do.
* ``'…'`` and ``"…"`` are string literals (a backslash escapes the next character, as in Spark by default);
  `` `…` `` is a quoted identifier (a doubled backtick is one).
* A leading ``WITH [RECURSIVE] name [(columns)] AS (…) [, …]`` is skipped: the statement is what follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from airflow_provider_deltacc.contract.exceptions import SqlTextError

TokenKind = Literal["word", "string", "identifier", "symbol"]


@dataclass(frozen=True)
class Token:
    """One token of a SQL text.

    :param kind: ``word`` (a keyword, a name or a number), ``string`` (a literal, quotes included),
        ``identifier`` (a backtick-quoted name, backticks included) or ``symbol`` (one character).
    :param text: the token as written.
    """

    kind: TokenKind
    text: str


def tokens(text: str) -> list[Token]:
    """The tokens of ``text``, comments and white space left out.

    :param text: SQL text.
    :raises SqlTextError: on an unterminated string literal, quoted identifier or bracketed comment.
    """
    found: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char.isspace():
            i += 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            i = _after_comment(text, i)
        elif char in "'\"":
            end = _after_string(text, i)
            found.append(Token("string", text[i:end]))
            i = end
        elif char == "`":
            end = _after_identifier(text, i)
            found.append(Token("identifier", text[i:end]))
            i = end
        elif char.isalnum() or char == "_":
            end = i
            while end < n and (text[end].isalnum() or text[end] in "_$"):
                end += 1
            found.append(Token("word", text[i:end]))
            i = end
        else:
            found.append(Token("symbol", char))
            i += 1
    return found


def split_statements(text: str) -> list[list[Token]]:
    """The statements of ``text``: its tokens split at ``;``, empty statements left out.

    :param text: SQL text.
    :raises SqlTextError: see :func:`tokens`.
    """
    statements: list[list[Token]] = [[]]
    for token in tokens(text):
        if token.kind == "symbol" and token.text == ";":
            statements.append([])
        else:
            statements[-1].append(token)
    return [statement for statement in statements if statement]


def main_statement(statement: list[Token]) -> list[Token]:
    """The tokens of the statement proper: what follows a leading ``WITH`` clause (all of it otherwise).

    :param statement: one statement's tokens (see :func:`split_statements`).
    """
    if not statement or not _is_word(statement[0], "with"):
        return statement
    i = 1
    if i < len(statement) and _is_word(statement[i], "recursive"):
        i += 1
    while i < len(statement):
        i += 1  # the query's name
        if i < len(statement) and is_symbol(statement[i], "("):
            i = _after_parentheses(statement, i)  # its column names
        if i < len(statement) and _is_word(statement[i], "as"):
            i += 1
        if i < len(statement) and is_symbol(statement[i], "("):
            i = _after_parentheses(statement, i)
        if i < len(statement) and is_symbol(statement[i], ","):
            i += 1
            continue
        break
    return statement[i:]


def _is_word(token: Token, word: str) -> bool:
    return token.kind == "word" and token.text.lower() == word


def is_symbol(token: Token, symbol: str) -> bool:
    return token.kind == "symbol" and token.text == symbol


def _after_parentheses(statement: list[Token], start: int) -> int:
    depth = 0
    for i in range(start, len(statement)):
        if is_symbol(statement[i], "("):
            depth += 1
        elif is_symbol(statement[i], ")"):
            depth -= 1
            if depth == 0:
                return i + 1
    return len(statement)


def _after_comment(text: str, start: int) -> int:
    depth, i = 0, start
    while i < len(text):
        if text.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*/", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    raise SqlTextError(f"a /* comment */ opened at character {start} is never closed")


def _after_string(text: str, start: int) -> int:
    quote, i = text[start], start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == quote:
            return i + 1
        else:
            i += 1
    raise SqlTextError(f"the string literal opened at character {start} ({quote}) is never closed")


def _after_identifier(text: str, start: int) -> int:
    i = start + 1
    while i < len(text):
        if text[i] == "`":
            if text.startswith("``", i):
                i += 2
                continue
            return i + 1
        i += 1
    raise SqlTextError(f"the quoted identifier opened at character {start} (`) is never closed")
