"""The outbound policy: where the server may send a request of its own (http model backends, webhooks).

A user hands the server URLs (a model server, a webhook receiver); without a policy the server would call whatever
they name, including services that trust it because it runs beside them: a database admin page on loopback, a
cloud metadata endpoint, a private network. Every outbound request goes through :class:`OutboundPolicy`:

* only ``http`` and ``https`` URLs with a host and without a user name or password;
* the host is resolved (off the event loop where there is one: :meth:`OutboundPolicy.resolve_async`) and **every**
  address it resolves to is checked, whatever its spelling (``127.1``, ``2130706433``, ``0x7f000001``, ``[::1]``,
  ``[::ffff:127.0.0.1]``, a name that resolves to one of them): loopback, private, link-local (cloud metadata
  services), carrier-grade NAT, multicast, reserved and unspecified addresses, and IPv6 addresses that embed one
  (IPv4-mapped, 6to4, Teredo), are refused in every environment;
* unless the operator allowlists them: ``DYNAFORGE_OUTBOUND_ALLOW`` is a comma-separated list of networks (CIDR,
  ``10.0.0.0/8``), addresses (``127.0.0.1``) and host names (``models.internal``; a name allows every address it
  resolves to);
* the address that was checked is the one connected to (:class:`Target`: the URL with the address in place of the
  host, the original ``Host`` header and, for https, the original name for SNI and certificate checks), so a name
  cannot resolve to a public address for the check and to a private one for the connection (DNS rebinding);
* redirects are never followed (httpx's default), so an allowed host cannot bounce the request elsewhere.

Refusals raise :class:`OutboundRefused`, whose message names the rule and what to change, never what a remote
service answered. Its ``message`` names the host and the address it resolved to, for admins and the log;
:attr:`OutboundRefused.public` says only that the host is refused, for everyone else (what an internal name
resolves to, or whether it resolves at all, is the operator's business).
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

ENVIRONMENT_VARIABLE = "DYNAFORGE_OUTBOUND_ALLOW"
MAX_URL_LENGTH = 2000

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


#: What a non-admin is told when a URL's host is refused (``dns``, ``internal``): the same for a name that does not
#: resolve and for one that resolves to an internal address, and neither the host's addresses nor why.
PUBLIC_REFUSAL = (
    "is refused by the server's outbound policy: its host does not resolve to a public address, and the server "
    "calls loopback, private, link-local or otherwise internal addresses only when its operator allowlists them "
    f"({ENVIRONMENT_VARIABLE}); use a public URL, or ask an admin"
)


class OutboundRefused(ValueError):
    """The policy refuses a URL; ``rule`` is one of ``format``, ``credentials``, ``dns``, ``internal``."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule
        self.message = message

    @property
    def public(self) -> str:
        """The refusal as non-admins see it: a refused host's name, addresses and the reason stay out of it (they
        would map the server's network); a malformed URL keeps its message, which only describes the URL given."""
        return PUBLIC_REFUSAL if self.rule in ("dns", "internal") else self.message


@dataclass(frozen=True)
class Target:
    """A checked URL, pinned to the address that was checked."""

    url: str  # as given
    pinned_url: str  # the same URL with the checked address in place of the host name
    host_header: str  # the original host (and port) for the Host header
    sni_hostname: str | None  # https: the original host name, for SNI and the certificate check
    address: str

    def headers(self) -> dict[str, str]:
        return {"Host": self.host_header}

    def extensions(self) -> dict[str, str]:
        """httpx request extensions: the original name for TLS (the connection itself goes to the address)."""
        return {"sni_hostname": self.sni_hostname} if self.sni_hostname else {}


def _embedded(ip: Address) -> Address:
    """The IPv4 address an IPv6 address carries (IPv4-mapped, 6to4, Teredo's client), or the address itself."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip.teredo is not None:
            return ip.teredo[1]
    return ip


def internal(ip: Address) -> bool:
    """Whether an address is not a public unicast one (or carries one that is not)."""
    for candidate in {ip, _embedded(ip)}:
        if (
            not candidate.is_global
            or candidate.is_multicast
            or candidate.is_reserved
            or candidate.is_unspecified
            or candidate.is_loopback
            or candidate.is_link_local
        ):
            return True
    return False


class OutboundPolicy:
    """See the module docstring. ``allow``: the operator's allowlist (networks, addresses and host names)."""

    def __init__(self, allow: str | list[str] | tuple[str, ...] = ""):
        entries = [e.strip() for e in (allow.split(",") if isinstance(allow, str) else allow)]
        self.networks: list[Network] = []
        self.hosts: set[str] = set()
        for entry in filter(None, entries):
            try:
                self.networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                self.hosts.add(entry.lower().rstrip("."))

    @classmethod
    def from_environment(cls) -> OutboundPolicy:
        """The policy of this process: ``DYNAFORGE_OUTBOUND_ALLOW`` (model workers and evaluation jobs inherit it
        from the server that starts them)."""
        return cls(os.environ.get(ENVIRONMENT_VARIABLE, ""))

    def allows_address(self, ip: Address) -> bool:
        """A public address, or an internal one inside an allowlisted network."""
        if not internal(ip):
            return True
        embedded = _embedded(ip)
        return any(
            (candidate.version == network.version and candidate in network)
            for network in self.networks
            for candidate in (ip, embedded)
        )

    # ------------------------------------------------------------------ checks
    def check_format(self, url: object) -> SplitResult:
        """The URL's parts, or OutboundRefused (``format``, ``credentials``) for one no request may go to."""
        if not isinstance(url, str) or len(url) > MAX_URL_LENGTH:
            raise OutboundRefused("format", f"must be an http or https URL of at most {MAX_URL_LENGTH} characters")
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises ValueError for a port out of range
        except ValueError as exc:
            raise OutboundRefused("format", f"is not a valid URL ({exc})") from exc
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise OutboundRefused("format", "must be an absolute http or https URL, e.g. https://models.example.org")
        if parts.username is not None or parts.password is not None:
            raise OutboundRefused(
                "credentials", "must not carry a user name or password; send credentials in headers instead"
            )
        return parts

    def resolve(self, url: object) -> Target:
        """Check ``url``, resolve its host and check every address (blocking: call it off the event loop)."""
        parts = self.check_format(url)
        assert isinstance(url, str) and parts.hostname is not None
        host = parts.hostname.rstrip(".").lower()
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            literal: Address | None = ipaddress.ip_address(host.split("%", 1)[0])
        except ValueError:
            literal = None
        if literal is not None:
            addresses = [literal]
        else:
            try:
                infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except (OSError, UnicodeError) as exc:
                raise OutboundRefused(
                    "dns", f"the host {host!r} does not resolve ({getattr(exc, 'strerror', None) or exc}); check it"
                ) from None
            addresses = list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos))
        if not addresses:
            raise OutboundRefused("dns", f"the host {host!r} has no address; check it")
        if host not in self.hosts:
            refused = [a for a in addresses if not self.allows_address(a)]
            if refused:
                raise OutboundRefused(
                    "internal",
                    f"{host!r} is (or resolves to) a loopback, private, link-local or otherwise internal address "
                    f"({refused[0]}); the server only calls public hosts unless its operator adds the host or network "
                    f"to {ENVIRONMENT_VARIABLE}",
                )
        address = addresses[0]
        netloc_host = f"[{address}]" if address.version == 6 else str(address)
        netloc = netloc_host + (f":{parts.port}" if parts.port else "")
        pinned = parts._replace(netloc=netloc).geturl()
        original = parts.netloc.rsplit("@", 1)[-1]
        return Target(
            url=url,
            pinned_url=pinned,
            host_header=original,
            sni_hostname=host if parts.scheme == "https" and literal is None else None,
            address=str(address),
        )

    async def resolve_async(self, url: object) -> Target:
        """:meth:`resolve` on a thread, so that a slow name server never stalls the event loop."""
        return await asyncio.to_thread(self.resolve, url)
