<?php

declare(strict_types=1);

namespace Rlserver;

/** The server could not be reached (connection refused or lost, timeout, LOADING, CLUSTERDOWN...) and the failure policy is FailureMode::Error. */
class UnreachableException extends RlserverException
{}
