"""The scripted tour of `make contract` with the Python client openapi-python-client generated (default
settings) from the running platform's document: sign in, a token, a subdomain, a link created, read,
listed, changed and deleted, its statistics, a webhook and its delivery log, an export. Each answer is
parsed by the generated models, so an answer that does not match its schema fails here.

    python tour.py <base URL> <e-mail> <password>     (contract/clients/run.sh runs it)
"""

import json
import secrets
import sys
import typing

from link_tracking_platform_api_client import AuthenticatedClient, Client
from link_tracking_platform_api_client.api.auth import login
from link_tracking_platform_api_client.api.links import create_link, delete_link, get_link, list_links, update_link
from link_tracking_platform_api_client.api.stats import export_visits, get_stats
from link_tracking_platform_api_client.api.subdomains import claim_subdomain
from link_tracking_platform_api_client.api.tokens import create_token, revoke_token
from link_tracking_platform_api_client.api.webhooks import (
    create_webhook,
    delete_webhook,
    list_webhook_deliveries,
    test_webhook,
)
from link_tracking_platform_api_client.models import (
    ClaimSubdomainBody,
    CreateLinkBody,
    CreateTokenBody,
    CreateTokenBodyScopesItem,
    CreateWebhookBody,
    CreateWebhookBodyEventsItem,
    ExportVisitsFormat,
    GetStatsScope,
    LoginBody,
    NotFoundFailure,
    PageMeta,
    TimeZone,
    UpdateLinkBody,
)


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"python client tour: {what}")


def parsed(response, status: int, what: str):
    """The parsed body of an answer of the expected status (the generated model of that status)."""
    check(response.status_code == status, f"{what}: HTTP {response.status_code}, expected {status}: {response.content[:300]!r}")
    check(response.parsed is not None, f"{what}: the client did not parse the answer")
    return response.parsed


def tour(api: AuthenticatedClient) -> None:
    """What a token holder does: a subdomain, links, statistics, a webhook, exports."""
    name = f"py-tour-{secrets.token_hex(4)}"
    parsed(claim_subdomain.sync_detailed(client=api, body=ClaimSubdomainBody(name=name)), 201, "claim a subdomain")

    # Links: create, read, list (typed page meta), change, delete; the deleted link is a typed 404.
    created = create_link.sync_detailed(client=api, body=CreateLinkBody(subdomain=name, target_url="https://example.com/python"))
    link = parsed(created, 201, "create a link").data
    parsed(create_link.sync_detailed(client=api, body=CreateLinkBody(subdomain=name, target_url="https://example.com/python/2")), 201, "create a second link")
    check(parsed(get_link.sync_detailed(link.id, client=api), 200, "read the link").data.target_url == "https://example.com/python", "the link read")
    first = parsed(list_links.sync_detailed(client=api, subdomain=name, limit=1), 200, "list links")
    check(isinstance(first.meta, PageMeta), "the list's meta is a PageMeta")
    check(first.meta.count == 1 and first.meta.total == 2 and first.meta.has_more, f"the first page's meta: {first.meta.to_dict()}")
    check(isinstance(first.meta.next_cursor, str), "the first page has a next cursor")
    last = parsed(list_links.sync_detailed(client=api, subdomain=name, limit=1, cursor=first.meta.next_cursor), 200, "list the next page")
    check(last.meta.next_cursor is None and not last.meta.has_more, "the last page has no next cursor")
    changed = parsed(update_link.sync_detailed(link.id, client=api, body=UpdateLinkBody(title="Changed by the Python client")), 200, "change the link")
    check(changed.data.title == "Changed by the Python client", "the changed title")
    parsed(delete_link.sync_detailed(link.id, client=api), 200, "delete the link")
    gone = parsed(get_link.sync_detailed(link.id, client=api), 404, "read the deleted link")
    check(isinstance(gone, NotFoundFailure) and gone.error.code == "not_found", "the deleted link's typed 404")

    # Statistics in a time zone of the TimeZone enum.
    report = parsed(get_stats.sync_detailed(GetStatsScope.SUBDOMAIN, name, client=api, tz=TimeZone.ASIA_KOLKATA), 200, "the subdomain's report")
    check(report.data.range_.tz == "Asia/Kolkata", f"the report's time zone: {report.data.range_.tz}")

    # A webhook, its test delivery and the delivery log (ids are strings, as documented).
    body = CreateWebhookBody(url="https://hooks.invalid/python-tour", events=[CreateWebhookBodyEventsItem.LINK_CREATED])
    webhook = parsed(create_webhook.sync_detailed(client=api, body=body), 201, "create a webhook").data
    parsed(test_webhook.sync_detailed(webhook.id, client=api), 200, "test the webhook")
    log = parsed(list_webhook_deliveries.sync_detailed(webhook.id, client=api), 200, "the delivery log")
    check(len(log.data.deliveries) == 1 and isinstance(log.data.deliveries[0].id, str), "the delivery log's ids are strings")
    parsed(delete_webhook.sync_detailed(webhook.id, client=api), 200, "delete the webhook")

    # Exports: CSV (text, a header row) and JSON (the envelope).
    csv = parsed(export_visits.sync_detailed(client=api, format_=ExportVisitsFormat.CSV, subdomain=name), 200, "export CSV")
    check(isinstance(csv, str) and "," in csv.partition("\n")[0], f"the CSV's header row: {csv[:200]!r}")
    exported = export_visits.sync_detailed(client=api, format_=ExportVisitsFormat.JSON, subdomain=name)
    check(exported.status_code == 200 and json.loads(exported.content)["ok"] is True, "export JSON")


def main() -> None:
    base, email, password = sys.argv[1:4]

    # The generated model types next_cursor as a string or None (typed PageMeta, not free-form meta).
    hints = typing.get_type_hints(PageMeta)
    check(hints["next_cursor"] == (str | None), f"PageMeta.next_cursor is annotated {hints['next_cursor']}, not str | None")
    check(TimeZone.ETC_GMT_PLUS_0.value == "Etc/GMT+0" and TimeZone.ETC_GMT0.value == "Etc/GMT0", "TimeZone names")

    # Sign in: the session cookie stays in the client's cookie jar; writes with it need the Origin.
    with Client(base_url=base, headers={"Origin": base}) as session:
        parsed(login.sync_detailed(client=session, body=LoginBody(email=email, password=password)), 200, "sign in")
        scopes = [
            CreateTokenBodyScopesItem.LINKSREAD,
            CreateTokenBodyScopesItem.LINKSWRITE,
            CreateTokenBodyScopesItem.STATSREAD,
            CreateTokenBodyScopesItem.SUBDOMAINWRITE,
        ]
        minted = parsed(create_token.sync_detailed(client=session, body=CreateTokenBody(name="python client tour", scopes=scopes)), 201, "create a token")
        check(minted.data.token.startswith("svc_u_"), "the token's secret")
        with AuthenticatedClient(base_url=base, token=minted.data.token) as api:
            tour(api)
        parsed(revoke_token.sync_detailed(minted.data.id, client=session), 200, "revoke the token")
    print("python client tour: sign in, token, subdomain, links CRUD, stats, webhook, export: ok")


if __name__ == "__main__":
    main()
