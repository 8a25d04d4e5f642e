import nodemailer from 'nodemailer';
import type { Context } from './context.js';
import type { UsersRepository } from './users/users.repository.js';
import type { WebhooksRepository } from './webhooks/webhooks.repository.js';

/** What the owner is told (a webhook disabled after failing deliveries, …). */
export interface Notice {
  userId: string;
  kind: string;
  title: string;
  body: string;
  data: Record<string, unknown>;
}

/** What a notifier uses: the notifications' table (in the webhooks' repository), the owners' e-mail addresses, SMTP_URL, the log. */
export type NotifierDeps = { webhooks: WebhooksRepository; users: UsersRepository } & Pick<Context, 'config' | 'log'>;

/**
 * Notifies an owner: a notification record the dashboard shows (`GET /api/v1/notifications`),
 * and an e-mail when SMTP_URL is configured. A failed e-mail is logged and leaves the record
 * (without `emailed_at`): the record is what must not be lost.
 */
export function createNotifier({ webhooks: repository, users, config, log }: NotifierDeps) {
  const smtp = config.smtp;
  const transport = smtp ? nodemailer.createTransport(smtp.url) : undefined;
  return {
    async notify(notice: Notice): Promise<void> {
      const row = await repository.insertNotification({ user_id: notice.userId, kind: notice.kind, title: notice.title, body: notice.body, data: notice.data });
      if (!transport || !smtp) return;
      const email = await users.emailOf(notice.userId);
      if (email === undefined) return;
      try {
        await transport.sendMail({ from: smtp.from, to: email, subject: notice.title, text: notice.body });
        await repository.markEmailed(row.id);
      } catch (error) {
        log.warn({ err: error, notification: row.id }, 'notification e-mail failed; the dashboard still shows it');
      }
    },
    close(): void {
      transport?.close();
    },
  };
}
