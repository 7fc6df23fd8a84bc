// factom.js (npm: factom), unchanged, against a node and a wallet locked with an RPC user
// and password (HTTP basic authentication, docs/jsonrpc.md §1.1).
// Usage: node check_auth.js '{"node": {"host", "port"}, "wallet": {...}, "user", "password"}'
// Prints one JSON object: what each call answered (the Python test asserts on it).
'use strict';

const { FactomCli } = require('factom');

const config = JSON.parse(process.argv[2]);

function cli(user, password) {
    const auth = user === null ? {} : { user, password };
    return new FactomCli({
        factomd: { host: config.node.host, port: config.node.port, retry: { retries: 0 }, ...auth },
        walletd: { host: config.wallet.host, port: config.wallet.port, retry: { retries: 0 }, ...auth },
    });
}

async function refusal(call) {
    try {
        await call();
    } catch (error) {
        return {
            name: error.constructor.name,
            apiError: typeof error.code === 'number',
            message: String(error.message),
        };
    }
    return null;
}

async function main() {
    const out = {};
    const good = cli(config.user, config.password);
    out.height = (await good.getHeights()).directoryBlockHeight;
    out.addresses = (await good.walletdApi('all-addresses')).addresses.length;
    const wrong = cli(config.user, 'wrong-' + config.password);
    out.nodeWrong = await refusal(() => wrong.getHeights());
    out.walletWrong = await refusal(() => wrong.walletdApi('wallet-backup'));
    const none = cli(null, null);
    out.nodeNone = await refusal(() => none.getHeights());
    out.walletNone = await refusal(() => none.walletdApi('all-addresses'));
    return out;
}

main().then(
    (out) => {
        process.stdout.write(JSON.stringify(out));
    },
    (error) => {
        process.stderr.write(String(error && error.stack ? error.stack : error));
        process.exit(1);
    }
);
