"""CREATE CLUSTER / CREATE CLUSTER REPLICA / ALTER CLUSTER / DROP CLUSTER [REPLICA],
in Materialize's syntax, parsed from sqlglot tokens."""

from __future__ import annotations

from sqlglot.dialects.postgres import Postgres
from sqlglot.tokens import Token, TokenType

from weir.errors import SqlState, WeirError
from weir.sql import statements as st

_DIALECT = Postgres()


class _Tokens:
    def __init__(self, text: str) -> None:
        self.toks: list[Token] = [t for t in _DIALECT.tokenize(text) if t.token_type != TokenType.SEMICOLON]
        self.i = 0

    def peek(self, k: int = 0) -> Token | None:
        return self.toks[self.i + k] if self.i + k < len(self.toks) else None

    def word(self, k: int = 0) -> str:
        t = self.peek(k)
        return t.text.upper() if t is not None and t.token_type != TokenType.STRING else ""

    def take(self) -> Token:
        t = self.peek()
        if t is None:
            raise WeirError(SqlState.SYNTAX_ERROR, "syntax error at end of input")
        self.i += 1
        return t

    def expect(self, *words: str) -> None:
        for w in words:
            t = self.take()
            if t.text.upper() != w:
                raise WeirError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{t.text}"')

    def accept(self, *words: str) -> bool:
        if all(self.word(k) == w for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def ident(self) -> str:
        t = self.take()
        if t.token_type == TokenType.STRING:
            raise WeirError(SqlState.SYNTAX_ERROR, f"syntax error at or near \"'{t.text}'\"")
        return t.text if t.token_type == TokenType.IDENTIFIER else t.text.lower()

    def done(self) -> None:
        t = self.peek()
        if t is not None:
            raise WeirError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{t.text}"')

    def options(self) -> dict[str, str]:
        """(NAME [=] value, ...) or bare NAME [=] value pairs until the end."""
        out: dict[str, str] = {}
        paren = self.accept("(")
        while self.peek() is not None:
            if paren and self.word() == ")":
                self.take()
                break
            name_parts = []
            while self.peek() is not None and self.word() not in ("=", ",", ")") and \
                    self.peek().token_type not in (TokenType.STRING, TokenType.NUMBER):  # type: ignore[union-attr]
                name_parts.append(self.take().text.upper())
            if not name_parts:
                raise WeirError(SqlState.SYNTAX_ERROR, f'syntax error at or near "{self.take().text}"')
            self.accept("=")
            value = self.take()
            out[" ".join(name_parts)] = value.text
            if not self.accept(","):
                if paren:
                    self.expect(")")
                break
        return out


def parse_cluster_statement(text: str) -> st.Statement | None:
    """Returns None when `text` is not a cluster statement."""
    ts = _Tokens(text)
    if ts.accept("CREATE", "CLUSTER", "REPLICA"):
        cluster = ts.ident()
        ts.expect(".")
        name = ts.ident()
        opts = ts.options()
        ts.done()
        return st.CreateClusterReplica(text, cluster, name, opts)
    if ts.accept("CREATE", "CLUSTER"):
        name = ts.ident()
        if ts.accept("REPLICAS"):
            ts.expect("(")
            replicas = []
            while not ts.accept(")"):
                rname = ts.ident()
                replicas.append(st.ReplicaDef(rname, ts.options()))
                ts.accept(",")
            ts.done()
            return st.CreateCluster(text, name, {}, replicas)
        opts = ts.options()
        ts.done()
        return st.CreateCluster(text, name, opts, None)
    if ts.accept("ALTER", "CLUSTER"):
        if_exists = ts.accept("IF", "EXISTS")
        name = ts.ident()
        if ts.accept("RESET"):
            opts = {k: "" for k in ts.options()}
        else:
            ts.expect("SET")
            opts = ts.options()
        ts.done()
        return st.AlterCluster(text, name, opts, if_exists)
    if ts.accept("DROP", "CLUSTER", "REPLICA"):
        if_exists = ts.accept("IF", "EXISTS")
        names = []
        while True:
            cluster = ts.ident()
            ts.expect(".")
            names.append([cluster, ts.ident()])
            if not ts.accept(","):
                break
        cascade = ts.accept("CASCADE")  # drops what reads the replica's introspection sources
        ts.accept("RESTRICT")
        ts.done()
        return st.Drop(text, "cluster replica", names, if_exists, cascade)
    if ts.accept("DROP", "CLUSTER"):
        if_exists = ts.accept("IF", "EXISTS")
        names = [[ts.ident()]]
        while ts.accept(","):
            names.append([ts.ident()])
        cascade = ts.accept("CASCADE")
        ts.accept("RESTRICT")
        ts.done()
        return st.Drop(text, "cluster", names, if_exists, cascade)
    return None
