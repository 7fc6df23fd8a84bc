"""The one test harness: ports, waiting, processes, servers, PostgreSQL and the stack.

=================  ========================================================================
module             what it holds
=================  ========================================================================
``ports``          ``free_port``: a loopback port nothing is bound to
``waiting``        ``wait_until``: poll a condition until it holds or its deadline passes
``processes``      ``ManagedProcess`` (a child in a session of its own, killed with its
                   group), ``child_env``, ``settings_env``
``services``       the ledger's services as processes: ``NodeProcess``, ``LedgerProcesses``
``servers``        in-thread servers: ``AppServer`` (an ASGI app on uvicorn), ``HttpServer``
                   (an ``http.server`` handler)
``metrics``        ``Samples``: a ``/metrics`` scrape, parsed, by name and labels
``postgres``       ``PG_URL``, the reachability check, the ``postgres_url`` fixture, a fresh
                   database per test (``fresh_database``, ``postgres_database``) and the
                   ``--require-postgres`` / ``NOTARY_TEST_REQUIRE_POSTGRES`` switch
``stack``          fixtures: the bundled stack in a thread (``running_stack`` to configure
                   it), pipeline settings, Prefect
``tls``            ``issue_certificate``: a throw-away authority and server certificate
``litecoind``      a real ``litecoind -regtest`` (``LitecoinNode``, the ``litecoin_node``
                   fixture, ``BlockTicker``), installed with apt-get when missing
``tsa``            OpenSSL's RFC 3161 timestamp authority over HTTP (``issue_tsa``,
                   ``tsa_server``), and the faulty one (``fault=...``)
``ots_calendar``   test doubles of an OpenTimestamps calendar (``ots_calendar``: the calendar
                   HTTP protocol, answers built with ``opentimestamps``, ``confirm`` into a
                   fabricated regtest-difficulty Bitcoin block; faulty ones) and of an
                   Esplora header API (``esplora``)
``debian``         ``apt_install``: a Debian package a test needs (a browser, a daemon, a
                   command), installed when missing and running as root (as CI does)
=================  ========================================================================

Tests import what they need from the module that holds it; ``tests/conftest.py`` loads the
fixture modules (``stack``, ``postgres``, ``litecoind``) as plugins.
"""
