<?php

declare(strict_types=1);

namespace Rlserver;

/**
 * What Options::$onError receives: a call the failure policy answered
 * (the server was unreachable; mode says how), or a configuration error
 * (config: a wrong or missing password, NOPERM, WRONGTYPE, an unknown
 * command), which raises ServerException whatever the policy (mode Error).
 */
final class ErrorEvent
{
    public function __construct(
        public readonly string $command, // e.g. "CL.TOKENBUCKET"
        public readonly string $key,     // the limited key (the first rule's for all())
        public readonly \Throwable $error,
        public readonly FailureMode $mode,
        public readonly bool $config = false,
    ) {
    }
}
