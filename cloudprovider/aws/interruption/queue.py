"""The interruption queue: the SQS queue EventBridge fills with EC2 interruption events, read and acked.

`InterruptionQueue` does three calls and no other (the IAM policy grants exactly these on the queue):
`GetQueueUrl` once (the name is the setting; the URL is looked up on first use and kept),
`ReceiveMessage` (a long poll of up to `max_messages`), and `DeleteMessage` (by receipt handle, once the
message's action is recorded). A message received and not deleted comes back after the queue's
visibility timeout: that is what makes consumption at-least-once. SDK errors leave translated
(cloudprovider.aws.errors: CloudProviderError, ThrottledError).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from cloudprovider.aws.errors import call
from cloudprovider.aws.sdk import SQSAPI

MAX_MESSAGES = 10  # SQS's most per ReceiveMessage
WAIT_SECONDS = 20  # SQS's longest long poll; under the SDK's 30 s read timeout (factory.sdk_config)


@dataclass(frozen=True)
class QueueMessage:
    """One received message: SQS's `message_id` (the same on every redelivery), the `receipt_handle`
    that deletes this delivery, and the `body` (an EventBridge event as JSON)."""

    message_id: str
    receipt_handle: str
    body: str


class InterruptionQueue:
    """The queue named `queue_name` on `sqs` (see the module docstring). Thread-safe."""

    def __init__(self, sqs: SQSAPI, queue_name: str) -> None:
        if not queue_name:
            raise ValueError("InterruptionQueue: queue_name is required (the interruption queue's name)")
        self._sqs = sqs
        self.name = queue_name
        self._url: str | None = None
        self._lock = threading.Lock()

    def url(self) -> str:
        """The queue's URL (GetQueueUrl, once)."""
        with self._lock:
            if self._url is None:
                response = call("GetQueueUrl", self._sqs.get_queue_url, QueueName=self.name)
                self._url = str(response["QueueUrl"])
            return self._url

    def receive(self, max_messages: int = MAX_MESSAGES, wait_seconds: int = WAIT_SECONDS) -> list[QueueMessage]:
        """Up to `max_messages` messages, waiting up to `wait_seconds` for the first; [] when none came."""
        response = call(
            "ReceiveMessage",
            self._sqs.receive_message,
            QueueUrl=self.url(),
            MaxNumberOfMessages=max_messages,
            WaitTimeSeconds=wait_seconds,
        )
        return [
            QueueMessage(str(m.get("MessageId", "")), str(m["ReceiptHandle"]), str(m.get("Body", "")))
            for m in response.get("Messages", [])
        ]

    def delete(self, message: QueueMessage) -> None:
        """Delete this delivery of the message (idempotent on SQS's side for a valid receipt handle)."""
        call("DeleteMessage", self._sqs.delete_message, QueueUrl=self.url(), ReceiptHandle=message.receipt_handle)
