<?php

declare(strict_types=1);

namespace Rlserver;

/** What Options::$onError receives when the failure policy answers instead of the server. */
final class ErrorEvent
{
    public function __construct(
        public readonly string $command, // e.g. "CL.TOKENBUCKET"
        public readonly string $key,     // the limited key (the first rule's for all())
        public readonly \Throwable $error,
        public readonly FailureMode $mode,
    ) {
    }
}
