<?php

declare(strict_types=1);

namespace Rlserver;

/** An error reply from the server (WRONGTYPE, ERR ...); the message is the reply. */
class ServerException extends RlserverException
{}
