<?php
// Runs commands through phpredis's cluster client, RedisCluster.
//
// Usage: php cluster.php SEED_HOST:SEED_PORT < commands.json
//
// Standard input is a JSON array of commands, each an array of strings, such
// as ["SET","k1","v"] or ["CL.THROTTLE","user:{a}","10","20","60"]. They run
// in order through one RedisCluster client that knows only the seed; standard
// output is one JSON array with the reply to each command: integers as
// numbers, bulk and status strings as strings (OPT_REPLY_LITERAL: "OK", not
// true), nil as null, arrays as arrays, and {"error": "<message>"} for an
// error reply, with the text getLastError() gives. phpredis keeps no text for
// an error inside an array (it gives false there): such an element is
// {"error": null}. An exception the library throws for one command is
// reported as {"error": "<its message>"} too.
//
// Each command goes through rawCommand($key, $cmd, ...$args), routed by its
// first argument as the key: phpredis sends it to the primary that serves
// that key's slot in its map, whatever the command, and follows -MOVED and
// -ASK redirections. A command with no argument goes to the seed.
//
// Exits non-zero only when the input is not such an array or the client
// cannot connect to the cluster.

function fail(string $msg): void
{
    fwrite(STDERR, "cluster.php: $msg\n");
    exit(1);
}

function to_json($v, bool $nested)
{
    if (is_array($v)) {
        return array_map(fn($x) => to_json($x, true), array_values($v));
    }
    if ($v === false && $nested) {
        return ['error' => null];
    }
    return $v; // string, int or null
}

if ($argc != 2 || strpos($argv[1], ':') === false) {
    fail('usage: cluster.php SEED_HOST:SEED_PORT < commands.json');
}
$seed = $argv[1];
$colon = strrpos($seed, ':');
$seedNode = [substr($seed, 0, $colon), (int)substr($seed, $colon + 1)];

$cmds = json_decode(stream_get_contents(STDIN), true);
$ok = is_array($cmds) && array_is_list($cmds);
foreach ($ok ? $cmds : [] as $cmd) {
    if (!is_array($cmd) || !array_is_list($cmd) || count($cmd) == 0) {
        $ok = false;
        break;
    }
    foreach ($cmd as $arg) {
        if (!is_string($arg)) {
            $ok = false;
            break 2;
        }
    }
}
if (!$ok) {
    fail('bad input: want an array of non-empty arrays of strings');
}

try {
    $rc = new RedisCluster(null, [$seed], 2, 2);
    $rc->setOption(Redis::OPT_REPLY_LITERAL, true);
} catch (Throwable $e) {
    fail("connecting to $seed: " . $e->getMessage());
}

$out = [];
foreach ($cmds as $cmd) {
    $name = array_shift($cmd);
    $target = count($cmd) > 0 ? $cmd[0] : $seedNode;
    try {
        $rc->clearLastError();
        $reply = $rc->rawCommand($target, $name, ...$cmd);
        if ($reply === false) {
            $out[] = ['error' => $rc->getLastError()];
        } else {
            $out[] = to_json($reply, false);
        }
    } catch (Throwable $e) {
        $out[] = ['error' => $e->getMessage()];
    }
}
$rc->close();
echo json_encode($out, JSON_INVALID_UTF8_SUBSTITUTE | JSON_UNESCAPED_SLASHES), "\n";
