// factom.js (npm: factom), unchanged, against the bundled node and wallet.
// Usage: node check.js '{"node": {"host", "port"}, "wallet": {...}, "ec": {...}, "fct": {...}}'
// Prints one JSON object: what each call answered (the Python test asserts on it).
'use strict';

const crypto = require('crypto');
const { FactomCli, Entry, Chain, generateRandomFctAddress, generateRandomEcAddress } = require('factom');

const config = JSON.parse(process.argv[2]);
const cli = new FactomCli({
    factomd: { host: config.node.host, port: config.node.port, retry: { retries: 0 } },
    walletd: { host: config.wallet.host, port: config.wallet.port, retry: { retries: 0 } },
});

async function until(probe, what) {
    const deadline = Date.now() + 60000;
    for (;;) {
        try {
            const value = await probe();
            if (value) return value;
        } catch (error) {
            if (Date.now() > deadline) throw error;
        }
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
    }
}

async function apiError(call) {
    try {
        await call();
    } catch (error) {
        return { name: error.constructor.name, code: error.code };
    }
    return null;
}

async function main() {
    const out = {};
    out.properties = await cli.factomdApi('properties');
    out.walletProperties = await cli.walletdApi('properties');
    out.heights = await cli.getHeights();
    out.rate = await cli.getEntryCreditRate();
    out.ecBalance = await cli.getBalance(config.ec.public);
    out.fctBalance = await cli.getBalance(config.fct.public);

    const tag = crypto.randomBytes(8).toString('hex');
    const first = Entry.builder().extId('factom.js', 'utf8').extId(tag, 'utf8').content('first', 'utf8').build();
    const chain = new Chain(first);
    out.addChain = await cli.add(chain, config.ec.secret); // signed here, not by the wallet
    const second = Entry.builder().chainId(chain.id).extId('second', 'utf8').content('two', 'utf8').build();
    out.addEntry = await cli.add(second, config.ec.public); // key fetched from the wallet
    out.chainId = chain.id.toString('hex');
    out.entryHashes = [chain.firstEntry.hash().toString('hex'), second.hash().toString('hex')];
    const recorded = await until(
        () => cli.getEntryWithBlockContext(out.entryHashes[1]).catch(() => null),
        'the entry in a block'
    );
    out.recordedContent = recorded.content.toString('utf8');
    out.blockContext = recorded.blockContext;
    out.chainExists = await cli.chainExists(chain.id);
    out.chainHead = await cli.getChainHead(chain.id);
    out.firstEntry = (await cli.getFirstEntry(chain.id)).content.toString('utf8');
    out.allEntries = (await cli.getAllEntriesOfChain(chain.id)).map((e) => e.content.toString('utf8'));

    const head = await cli.getDirectoryBlockHead();
    out.dblock = { keyMR: head.keyMR, height: head.height, entryBlocks: head.entryBlockRefs.length };
    out.dblockByKey = (await cli.getDirectoryBlock(head.keyMR)).keyMR;
    out.adminBlock = (await cli.getAdminBlock(head.height)).backReferenceHash;
    out.ecBlock = (await cli.getEntryCreditBlock(head.height)).headerHash;
    out.factoidBlock = (await cli.getFactoidBlock(head.height)).keyMR;
    out.entryBlock = (await cli.getEntryBlock(out.blockContext.entryBlockKeyMR)).keyMR;

    const to = generateRandomFctAddress();
    const tx = await cli.createFactoidTransaction(config.fct.secret, to.public, 100000000);
    out.txId = await cli.sendTransaction(tx);
    out.tx = tx.id;
    const credits = generateRandomEcAddress();
    const purchase = await cli.createEntryCreditPurchaseTransaction(config.fct.public, credits.public, 7);
    out.purchaseId = await cli.sendTransaction(purchase);
    out.received = await until(
        async () => ((await cli.getBalance(to.public)) === 100000000 ? 100000000 : null),
        'the coins received'
    );
    out.credits = await until(
        async () => ((await cli.getBalance(credits.public)) === 7 ? 7 : null),
        'the credits bought'
    );
    const fetched = await until(
        async () => {
            const t = await cli.getTransaction(out.txId);
            return t.blockContext ? t : null;
        },
        'the transaction in a block'
    );
    out.fetchedTx = { id: fetched.id, outputs: fetched.factoidOutputs.map((o) => o.amount) };

    out.nodeError = await apiError(() => cli.factomdApi('entry', { hash: 'ab'.repeat(32) }));
    out.walletError = await apiError(() => cli.walletdApi('address', { address: 'FAnonsense' }));
    out.unknownMethod = await apiError(() => cli.walletdApi('no-such-method'));
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
