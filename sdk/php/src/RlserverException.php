<?php

declare(strict_types=1);

namespace Rlserver;

/** Every error this SDK raises. */
class RlserverException extends \RuntimeException
{}
